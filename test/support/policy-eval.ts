/**
 * A ValidatingAdmissionPolicy's rules evaluated by cel-go (test/support/celeval) against a table
 * of admission requests, one mocha test per row: the same shape for every policy we ship.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { celeval } from './test-tools';

/** The parts of a rendered policy's spec cel-go evaluates. */
export interface PolicyRules {
  readonly variables: ReadonlyArray<{ readonly name: string; readonly expression: string }>;
  readonly validations: ReadonlyArray<{ readonly expression: string; readonly messageExpression: string }>;
}

/** One admission request of a table, and what the policy must answer. */
export interface PolicyRow {
  readonly request: Readonly<Record<string, unknown>>;
  readonly object: unknown;
  readonly oldObject: unknown;
  /** 'allowed', or the message of the first rule that refuses. */
  readonly want: 'allowed' | RegExp;
}

interface Outcome {
  readonly failed?: number[];
  readonly message?: string;
  readonly error?: string;
}

/**
 * Declares, inside a `describe`, a `before` that evaluates every row in one cel-go run and one
 * test per row named `allows <name>` or `refuses <name>`.
 */
export function policyTable(rules: () => PolicyRules, rows: ReadonlyArray<readonly [string, PolicyRow]>): void {
  let outcomes: Outcome[] = [];
  before(function () {
    this.timeout(30_000);
    const { variables, validations } = rules();
    const input = {
      admission: {
        variables,
        validations,
        cases: rows.map(([, r]) => ({ request: r.request, object: r.object, oldObject: r.oldObject })),
      },
    };
    outcomes = JSON.parse(execFileSync(celeval(), [], { input: JSON.stringify(input), encoding: 'utf8' })) as Outcome[];
  });
  rows.forEach(([name, r], i) => {
    it(`${r.want === 'allowed' ? 'allows' : 'refuses'} ${name}`, () => {
      const got = outcomes[i];
      expect(got?.error, 'evaluation error').to.equal(undefined);
      if (r.want === 'allowed') {
        expect(got?.failed, got?.message).to.deep.equal([]);
      } else {
        expect(got?.failed, 'no rule refused it').to.not.deep.equal([]);
        expect(got?.message).to.match(r.want);
      }
    });
  });
}
