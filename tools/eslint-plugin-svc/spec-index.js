// The sections and numbered rules of the two specification documents, read from the files
// themselves: `## 2. Title` / `### 2.3 Title` are sections, a top-level `N. ` line under one is
// its rule N. A citation names a section (`spec §2.3`) and may name a rule (`spec §2.3 rule 5`).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// the repository's copies (docs/spec/), so a clone anywhere lints the same
const SPEC_DIR = join(import.meta.dirname, '..', '..', 'docs', 'spec');
export const DOCUMENTS = { spec: 'operator-api-and-signed-release.md', contracts: 'contracts.md' };

/** Map of section number -> Set of rule numbers, for one document's text. */
export function indexDocument(text) {
  const sections = new Map();
  let current;
  for (const line of text.split('\n')) {
    const heading = /^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s/.exec(line);
    if (heading) {
      current = heading[1];
      sections.set(current, new Set());
      continue;
    }
    const rule = /^(\d+)\.\s/.exec(line);
    if (rule && current !== undefined) sections.get(current).add(Number(rule[1]));
  }
  return sections;
}

let cached;
/** Both documents' indexes, read once per process. */
export function specIndex() {
  cached ??= Object.fromEntries(Object.entries(DOCUMENTS).map(([name, file]) => [name, indexDocument(readFileSync(join(SPEC_DIR, file), 'utf8'))]));
  return cached;
}

/** `spec §2.3 rule 5`, `contracts §4`: the one citation form. */
export const CITATION = /\b(spec|contracts)\s+§(\d+(?:\.\d+)*)(?:\s+rule\s+(\d+))?/g;
/** A citation in another form: `spec §2.3 rule 5`, `spec §4 rule 2`, `contracts §4`. */
export const OTHER_FORM = /\b(spec|contracts)\s+(?:section\s+)?(\d+(?:\.\d+)*)\b/g;

/** Problems with the citations in one comment's text (empty when every citation is well-formed and exists). */
export function citationProblems(text, index = specIndex()) {
  const problems = [];
  for (const m of text.matchAll(OTHER_FORM)) problems.push(`cite as "${m[1]} §<section> rule <n>" (found "${m[0]}")`);
  for (const m of text.matchAll(CITATION)) {
    const [, doc, section, rule] = m;
    const rules = index[doc].get(section);
    if (rules === undefined) problems.push(`"${m[0]}": ${DOCUMENTS[doc]} has no section ${section}`);
    else if (rule !== undefined && !rules.has(Number(rule))) problems.push(`"${m[0]}": section ${section} of ${DOCUMENTS[doc]} has no rule ${rule}`);
  }
  return problems;
}
