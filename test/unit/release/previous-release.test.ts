/** Whether this checkout's node_modules can build an earlier release (test/support/previous-release.ts). */
import { expect } from 'chai';
import { missingFromCheckout, type Lockfile } from '../../support/previous-release';

const lock = (packages: Lockfile['packages']): Lockfile => ({ packages });

describe("previous release: building it on this checkout's node_modules", () => {
  const checkout = lock({
    '': { version: '0.2.0' },
    'node_modules/a': { version: '1.0.0', integrity: 'sha512-a' },
    'node_modules/b': { version: '2.0.0', integrity: 'sha512-b' },
    'node_modules/new': { version: '1.0.0', integrity: 'sha512-n' },
  });
  const cases: Record<string, { release: Lockfile; want: string[] }> = {
    'a release locking a subset at the same versions needs nothing more': {
      release: lock({ '': { version: '0.1.0' }, 'node_modules/a': { version: '1.0.0', integrity: 'sha512-a' } }),
      want: [],
    },
    'another version is missing': {
      release: lock({ 'node_modules/a': { version: '0.9.0', integrity: 'sha512-old' } }),
      want: ['a@0.9.0'],
    },
    'the same version with another integrity is missing': {
      release: lock({ 'node_modules/b': { version: '2.0.0', integrity: 'sha512-other' } }),
      want: ['b@2.0.0'],
    },
    'a package the checkout does not lock is missing, a link is not': {
      release: lock({ 'node_modules/gone': { version: '3.0.0' }, 'node_modules/linked': { link: true } }),
      want: ['gone@3.0.0'],
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => expect(missingFromCheckout(tc.release, checkout)).to.deep.equal(tc.want));
  }
});
