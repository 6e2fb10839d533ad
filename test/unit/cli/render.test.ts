import { expect } from 'chai';
import { diagnose } from '../../../cli/diagnose';
import { ageOf, humanAge, renderTrace, traceJson } from '../../../cli/render';
import { credentialFacts } from '../../../cli/snapshot';
import { useColor } from '../../../cli/terminal';
import { buildTree } from '../../../cli/trace';
import { API_KEY, config, configWith, credentialSecret, snapshot, waitingBucket } from './fixtures';

const ages: Record<string, [number, string]> = {
  seconds: [45_000, '45s'],
  'under two minutes in seconds': [119_000, '119s'],
  'minutes and seconds under ten minutes': [192_000, '3m12s'],
  'whole minutes': [300_000, '5m'],
  minutes: [17 * 60_000 + 5_000, '17m'],
  'hours and minutes': [(5 * 60 + 3) * 60_000, '5h3m'],
  hours: [20 * 3_600_000, '20h'],
  'days and hours': [(2 * 24 + 5) * 3_600_000, '2d5h'],
  days: [40 * 86_400_000, '40d'],
  'a clock behind': [-5_000, '0s'],
};

const missingSecret = () =>
  snapshot({
    bucket: waitingBucket('SecretNotFound', 'Secret team-a/provider-key not found'),
    config: { state: 'found', object: configWith('False', 'SecretNotFound', 'Secret team-a/provider-key not found') },
    secret: undefined,
  });

describe('kubectl bucket: rendering', () => {
  for (const [name, [ms, want]] of Object.entries(ages)) {
    it(`ages like kubectl: ${name} (${want})`, () => expect(humanAge(ms)).to.equal(want));
  }
  it('an unknown time is -', () => expect([ageOf(undefined, new Date()), ageOf('nonsense', new Date())]).to.deep.equal(['-', '-']));

  it('draws the tree with the root cause first, plain off a terminal', () => {
    const s = missingSecret();
    const tree = buildTree(s);
    const text = renderTrace(s, tree, diagnose(s, tree), { wide: true, color: false });
    expect(text).to.equal(
      [
        'Root cause: Secret/provider-key (credentials): SecretNotFound: Secret team-a/provider-key not found',
        '',
        'NAME                                     READY    SYNCED   REASON          AGE     MESSAGE',
        'StorageBucket/logs                       False    False    SecretNotFound  5m      Secret team-a/provider-key not found',
        '├─ BucketProviderConfig/default          False    -        SecretNotFound  5m      Secret team-a/provider-key not found',
        '│  └─ Secret/provider-key (credentials)  False    -        SecretNotFound  -       Secret team-a/provider-key not found',
        '├─ Secret/logs-access (connection)       True     -        Present         5m      controlled by StorageBucket team-a/logs',
        '├─ Service/logs (in-cluster DNS)         True     -        Present         5m      controlled by StorageBucket team-a/logs',
        '└─ ProviderBucket/- (per status)         -        -        NotRecorded     -       status records no provider bucket yet',
        '',
        'Events: none',
        '',
      ].join('\n'),
    );
  });

  it('cuts messages to the width unless wide, and colours only when asked', () => {
    const s = missingSecret();
    const tree = buildTree(s);
    const d = diagnose(s, tree);
    const narrow = renderTrace(s, tree, d, { wide: false, color: false, width: 110 });
    expect(narrow).to.include('…').and.not.include('\x1b[');
    expect(Math.max(...narrow.split('\n').map((l) => l.length))).to.be.at.most(110);
    expect(renderTrace(s, tree, d, { wide: true, color: true })).to.include('\x1b[31m');
  });

  it('JSON carries the root cause, the class, the fix and every node; never a key', () => {
    const s = snapshot({ config: { state: 'found', object: config() }, credentials: credentialFacts(config(), credentialSecret()) });
    const tree = buildTree(s);
    const d = diagnose(s, tree);
    const doc = traceJson(s, tree, d, 'why');
    expect(doc).to.deep.include({ class: 'ready', fix: [], name: 'logs', namespace: 'team-a' });
    expect(JSON.stringify(doc)).to.not.include(API_KEY).and.not.include(Buffer.from(API_KEY).toString('base64'));
  });

  const colour: Record<string, [Parameters<typeof useColor>, boolean]> = {
    'a terminal': [['auto', { isTTY: true, env: {} }], true],
    'a pipe': [['auto', { isTTY: false, env: {} }], false],
    'NO_COLOR on a terminal': [['auto', { isTTY: true, env: { NO_COLOR: '1' } }], false],
    'TERM=dumb': [['auto', { isTTY: true, env: { TERM: 'dumb' } }], false],
    '--color=always in a pipe': [['always', { isTTY: false, env: {} }], true],
    '--no-color on a terminal': [['never', { isTTY: true, env: {} }], false],
  };
  for (const [name, [args, want]] of Object.entries(colour)) {
    it(`colour on ${name}: ${want}`, () => expect(useColor(...args)).to.equal(want));
  }
});
