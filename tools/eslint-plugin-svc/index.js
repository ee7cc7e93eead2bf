// Project rules that keep comments true to the code: spec citations in one form that exist in
// the specification, and comments that describe the code rather than how it was written.
import { displayPath, missingPaths } from './repo-paths.js';
import { citationProblems } from './spec-index.js';

const HISTORY = [
  [/\bissue\s+#?\d+/i, 'names an issue'],
  [/\bother engineers?\b|\bthe [\w-]+ engineer\b/i, 'names who wrote the code'],
  [/\bSTYLE\s+\d+/, 'cites the style notes by number'],
  [/\(was \d[^)]*\)/i, 'describes an earlier value'],
];

function commentRule(check) {
  return {
    meta: { type: 'suggestion', schema: [] },
    create(context) {
      return {
        Program() {
          for (const comment of context.sourceCode.getAllComments()) {
            for (const message of check(comment.value)) context.report({ loc: comment.loc, message });
          }
        },
      };
    },
  };
}

export default {
  rules: {
    'spec-citation': commentRule((text) => citationProblems(text)),
    'repo-path': {
      meta: { type: 'problem', schema: [] },
      create(context) {
        return {
          Program() {
            for (const comment of context.sourceCode.getAllComments()) {
              for (const p of missingPaths(comment.value, context.filename))
                context.report({
                  loc: comment.loc,
                  message: `comment names ${p}, which does not exist (from ${displayPath(context.filename)}): name the file where it is now`,
                });
            }
          },
        };
      },
    },
    'no-history-comments': commentRule((text) => HISTORY.filter(([re]) => re.test(text)).map(([, why]) => `comment ${why}: describe the code instead`)),
  },
};
