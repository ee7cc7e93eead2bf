/**
 * What the sections of a case page share: the API's shapes, the words of an enum value, the write that refreshes the case.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { Schema, paths } from '../../../api/client';
import { caseQueries } from '../../../api/queries/cases';

export type Case = Schema<'/api/v1/cases/{id}', 'get'>;
export type Fields = Schema<'/api/v1/case-submission-fields', 'get'>;
export type StageName = Fields['stages'][number]['stage'];
export type FieldSpec = Fields['stages'][number]['fields']['exploited_vulnerability'][number];
export type FilingBody = paths['/api/v1/cases/{id}/submissions/{sid}/filings']['post']['requestBody']['content']['application/json'];
export type Recipient = FilingBody['recipients'][number];
export type MemberState = NonNullable<FilingBody['member_state']>;
export type Transport = NonNullable<FilingBody['transport']>;
export type CaseUpdate = paths['/api/v1/cases/{id}']['patch']['requestBody']['content']['application/json'];
export type FilingRecord = Schema<'/api/v1/cases/{id}/submissions/{sid}/filings', 'post', 201>;
export type Submission = Schema<'/api/v1/cases/{id}/submissions', 'get'>['submissions'][number];

/** An enum value in words (`not_reportable`: not reportable). */
export const words = (v: string) => v.replace(/_/g, ' ');

/** A write to the case that, once it succeeds, refreshes the case, the case lists and the case's audit trail. */
export function useCaseWrite<A>(id: string, write: (arg: A) => Promise<unknown>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: write,
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: caseQueries.detail(id).queryKey }),
        client.invalidateQueries({ queryKey: caseQueries.keys.lists }),
        client.invalidateQueries({ queryKey: caseQueries.keys.audit(id) }),
      ]),
  });
}
