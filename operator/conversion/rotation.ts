/**
 * When the conversion webhook's certificates change, decided from facts and the time alone
 * (pure; times in epoch milliseconds), so every rule is table-tested with a fake clock.
 * secret-certs.ts reads the facts out of the Secret and carries a step out.
 *
 * The Secret holds a CA bundle (`ca.crt`, one or two CAs, injected as the CRDs' caBundle),
 * the key of the newest CA (`ca.key`, the only one that signs) and the serving certificate.
 * A CA rotation is three steps, each waiting `overlapMs` for the previous one to reach every
 * reader, so the API server never meets a serving certificate it does not trust:
 *
 * 1. `addCa`: a new CA joins the bundle beside the old one; replicas still serve the old
 *    CA's certificate. The bundle reaches the CRDs' caBundle.
 * 2. `issueServing` (after `overlapMs`): a serving certificate from the new CA. Replicas pick
 *    it up one by one; each certificate in use is trusted through one CA or the other.
 * 3. `dropOldCas` (`overlapMs` after that): the bundle is the new CA alone.
 *
 * A serving certificate alone is renewed without an overlap: its CA is already trusted. A
 * Secret with nothing usable (absent, a key that matches no CA, an expired CA) starts afresh
 * with `create`; nothing to overlap with is trusted anyway.
 */

/** Lifetimes and rotation times of the webhook's certificates. */
export interface CertPolicy {
  /** Validity of a CA. */
  readonly caValidityMs: number;
  /** Validity of a serving certificate (capped at its CA's). */
  readonly servingValidityMs: number;
  /** Fraction of a certificate's life after which it is replaced (0 < f < 1). */
  readonly renewFraction: number;
  /** How long each step of a CA rotation waits for the previous one to reach every replica and the API server. */
  readonly overlapMs: number;
}

const DAY = 24 * 60 * 60 * 1000;

/**
 * The defaults: a CA for a year and a serving certificate for 90 days (cert-manager's
 * default), each replaced at two thirds of its life, so a month and more remains to notice a
 * rotation that does not happen; 15 minutes per overlap step is many times what a replica
 * needs to see a changed Secret through its watch and the API server a changed caBundle.
 */
export const DEFAULT_CERT_POLICY: CertPolicy = {
  caValidityMs: 365 * DAY,
  servingValidityMs: 90 * DAY,
  renewFraction: 2 / 3,
  overlapMs: 15 * 60 * 1000,
};

/** Throws, naming the field, when `policy` could let a certificate expire before it is replaced. */
export function checkCertPolicy(policy: CertPolicy): void {
  const { caValidityMs, servingValidityMs, renewFraction, overlapMs } = policy;
  if (!(renewFraction > 0 && renewFraction < 1)) throw new Error(`cert policy: renewFraction must be between 0 and 1, got ${renewFraction}`);
  if (!(overlapMs > 0)) throw new Error('cert policy: overlapMs must be positive');
  // A CA rotation takes two overlaps, during which the old CA and the serving certificate it
  // signed must stay valid: both have at least (1 - f) of their life left when it starts.
  const margin = (1 - renewFraction) * Math.min(caValidityMs, servingValidityMs);
  if (!(2 * overlapMs < margin)) {
    throw new Error('cert policy: 2 * overlapMs must be shorter than (1 - renewFraction) * min(caValidityMs, servingValidityMs)');
  }
}

/** Facts about one CA in the bundle. */
export interface CaFacts {
  /** When it was made (and joined the bundle). */
  readonly issuedAt: number;
  readonly notAfter: number;
  /** Its key is `ca.key`: it signs new serving certificates. */
  readonly signing: boolean;
}

/** Facts about the serving certificate. */
export interface ServingFacts {
  readonly issuedAt: number;
  readonly notAfter: number;
  /** Index in `cas` of the CA whose signature it carries; -1 for none of them. */
  readonly issuer: number;
  /** Its SANs are the ones wanted (the Service's names and any extra addresses). */
  readonly namesMatch: boolean;
  /** `tls.key` is its key. */
  readonly keyMatches: boolean;
}

/** What the Secret holds, as the planner needs it. */
export type CertFacts =
  | { readonly kind: 'absent' }
  | { readonly kind: 'unusable'; readonly reason: string }
  | { readonly kind: 'present'; readonly cas: readonly CaFacts[]; readonly serving?: ServingFacts };

/** The next change to the Secret, or when to look again. */
export type RotationStep =
  | { readonly kind: 'create'; readonly reason: string }
  | { readonly kind: 'addCa' }
  | { readonly kind: 'issueServing'; readonly reason: string }
  | { readonly kind: 'dropOldCas' }
  | { readonly kind: 'keep'; readonly recheckAt: number };

/** The next step for `facts` at `now`. Carrying it out and planning again converges to `keep`. */
export function planRotation(facts: CertFacts, now: number, policy: CertPolicy): RotationStep {
  switch (facts.kind) {
    case 'absent':
      return { kind: 'create', reason: 'no certificates yet' };
    case 'unusable':
      return { kind: 'create', reason: facts.reason };
    case 'present':
      break;
    default: {
      const never: never = facts;
      return never;
    }
  }
  const { cas, serving } = facts;
  const signingIndex = cas.findIndex((ca) => ca.signing);
  const signing = cas[signingIndex];
  if (!signing) return { kind: 'create', reason: 'no CA in the bundle matches the CA key' };
  if (signing.notAfter <= now) return { kind: 'create', reason: 'the CA has expired' };

  const servingProblem = problemOf(serving, now, policy);
  const fromSigning = serving?.issuer === signingIndex;

  if (cas.length > 1) {
    // A CA rotation is under way.
    if (!fromSigning) {
      const newCaTrustedAt = signing.issuedAt + policy.overlapMs;
      // A serving certificate that does not work at all is replaced now: there is no trust to keep.
      if (servingProblem && servingProblem !== 'renewal due') return { kind: 'issueServing', reason: servingProblem };
      if (now < newCaTrustedAt) return { kind: 'keep', recheckAt: newCaTrustedAt };
      return { kind: 'issueServing', reason: 'switching to the new CA' };
    }
    if (servingProblem) return { kind: 'issueServing', reason: servingProblem };
    const rolledOutAt = (serving?.issuedAt ?? now) + policy.overlapMs;
    if (now < rolledOutAt) return { kind: 'keep', recheckAt: rolledOutAt };
    return { kind: 'dropOldCas' };
  }

  const caRenewAt = renewAt(signing.issuedAt, signing.notAfter, policy);
  if (now >= caRenewAt) return { kind: 'addCa' };
  if (servingProblem || !serving) return { kind: 'issueServing', reason: servingProblem ?? 'no serving certificate' };
  return { kind: 'keep', recheckAt: Math.min(caRenewAt, renewAt(serving.issuedAt, serving.notAfter, policy)) };
}

/** Why the serving certificate must be replaced, or undefined when it may stay. */
function problemOf(serving: ServingFacts | undefined, now: number, policy: CertPolicy): string | undefined {
  if (!serving) return 'no serving certificate';
  if (!serving.keyMatches) return 'the serving key does not match the serving certificate';
  if (serving.issuer < 0) return 'the serving certificate is signed by no CA in the bundle';
  if (serving.notAfter <= now) return 'the serving certificate has expired';
  if (!serving.namesMatch) return 'the serving certificate names other hosts';
  if (now >= renewAt(serving.issuedAt, serving.notAfter, policy)) return 'renewal due';
  return undefined;
}

function renewAt(issuedAt: number, notAfter: number, policy: CertPolicy): number {
  return issuedAt + Math.floor(policy.renewFraction * (notAfter - issuedAt));
}
