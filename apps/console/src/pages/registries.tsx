import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../api/client';
import { artifactQueries } from '../api/queries/artifacts';
import { registryQueries } from '../api/queries/registries';
import { ErrorNote, Field, Guard, Mono, PageTitle, Paged, useListParams } from '../ui/kit';

/** OCI registries: register one, browse a repository's tags, import a tag as an artifact. */
export function RegistriesPage() {
  const list = useListParams();
  const client = useQueryClient();
  const query = { limit: list.limit, offset: list.offset };
  const registries = useQuery({
    ...registryQueries.list(query),
    placeholderData: keepPreviousData,
  });
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const create = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/registries', { body: { name, url } })),
    onSuccess: () => client.invalidateQueries({ queryKey: registryQueries.keys.lists }),
  });
  const [selected, setSelected] = useState<string>();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <>
      <PageTitle>Registries</PageTitle>
      <Guard perm="registries.write" legend="Register an OCI registry">
        <form onSubmit={submit} className="filters">
          <Field label="Name">{(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}</Field>
          <Field label="URL">
            {(id) => <input id={id} type="url" required placeholder="https://registry.example" value={url} onChange={(e) => setUrl(e.target.value)} />}
          </Field>
          <button type="submit" className="primary" disabled={create.isPending}>
            Register
          </button>
        </form>
        <ErrorNote error={create.error} />
      </Guard>
      <Paged what="registries" result={registries} list={list} head={['Name', 'URL', '']}>
        {(r) =>
          r.registries.map((reg) => (
            <tr key={reg.id}>
              <td>{reg.name}</td>
              <td>
                <Mono>{reg.url}</Mono>
              </td>
              <td>
                <button type="button" onClick={() => setSelected(reg.id)} aria-pressed={selected === reg.id}>
                  Browse tags of {reg.name}
                </button>
              </td>
            </tr>
          ))
        }
      </Paged>
      {selected !== undefined && <Tags registryId={selected} />}
    </>
  );
}

function Tags({ registryId }: { registryId: string }) {
  const client = useQueryClient();
  const [repository, setRepository] = useState('');
  const [asked, setAsked] = useState('');
  const tags = useQuery({
    ...registryQueries.tags(registryId, asked),
    retry: false,
  });
  const [version, setVersion] = useState('');
  const importTag = useMutation({
    mutationFn: (tag: string) =>
      ok(
        api.POST('/api/v1/registries/{id}/import', {
          params: { path: { id: registryId } },
          body: { repository: asked, tag, name: asked.split('/').pop() ?? asked, version: version || tag },
        }),
      ),
    onSuccess: () => client.invalidateQueries({ queryKey: artifactQueries.keys.lists }),
  });
  return (
    <section aria-labelledby="tags-h">
      <h2 id="tags-h">Tags</h2>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setAsked(repository);
        }}
      >
        <Field label="Repository">
          {(id) => <input id={id} required value={repository} onChange={(e) => setRepository(e.target.value)} placeholder="library/app" />}
        </Field>
        <button type="submit">List tags</button>
      </form>
      <ErrorNote error={tags.error ?? importTag.error} />
      {tags.data && (
        <Guard perm="artifacts.write" legend="Import a tag as an artifact">
          <Field label="Artifact version (default: the tag)">{(id) => <input id={id} value={version} onChange={(e) => setVersion(e.target.value)} />}</Field>
          <ul className="plain">
            {tags.data.tags.map((tag) => (
              <li key={tag}>
                <Mono>{tag}</Mono>{' '}
                <button type="button" onClick={() => importTag.mutate(tag)} disabled={importTag.isPending}>
                  Import {tag}
                </button>
              </li>
            ))}
          </ul>
          {importTag.data && (
            <p role="status">
              Imported {importTag.data.name} {importTag.data.version}.
            </p>
          )}
        </Guard>
      )}
    </section>
  );
}
