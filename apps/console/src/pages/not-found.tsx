import { Link } from 'react-router';
import { PageTitle } from '../ui/kit';

export function NotFoundPage() {
  return (
    <>
      <PageTitle>Page not found</PageTitle>
      <p>
        There is no page here. <Link to="/">Go to the fleet dashboard</Link>.
      </p>
    </>
  );
}
