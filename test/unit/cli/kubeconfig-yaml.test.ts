import { expect } from 'chai';
import fc from 'fast-check';
import * as yaml from 'yaml';
import { parse, parseBlockYaml } from '../../../cli/kubeconfig-yaml';

const CA =
  'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJlekNDQVNHZ0F3SUJBZ0lVTFkrOXZnMzF1VnVEQ2NyRmdqUDEzRmFPOHlZd0NnWUlLb1pJemowRUF3SXcKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=';

/** Kubeconfigs as the tools people use write them: each must take the fast path, and read as `yaml` reads it. */
const plain: Record<string, string> = {
  'kubectl config view --raw (go-yaml: sequences not indented, keys sorted)': [
    'apiVersion: v1',
    'clusters:',
    '- cluster:',
    `    certificate-authority-data: ${CA}`,
    '    server: https://127.0.0.1:6443',
    '  name: kind-kind',
    'contexts:',
    '- context:',
    '    cluster: kind-kind',
    '    namespace: team-a',
    '    user: kind-kind',
    '  name: kind-kind',
    'current-context: kind-kind',
    'kind: Config',
    'preferences: {}',
    'users:',
    '- name: kind-kind',
    '  user:',
    `    client-certificate-data: ${CA}`,
    `    client-key-data: ${CA}`,
    '',
  ].join('\n'),
  'an exec plugin with args, env: null and booleans (EKS, GKE)': [
    'apiVersion: v1',
    'clusters:',
    '- cluster:',
    '    insecure-skip-tls-verify: true',
    '    server: https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
    '    tls-server-name: kubernetes.default',
    '  name: arn:aws:eks:eu-west-1:123456789012:cluster/prod',
    'contexts:',
    '- context:',
    '    cluster: arn:aws:eks:eu-west-1:123456789012:cluster/prod',
    '    user: arn:aws:eks:eu-west-1:123456789012:cluster/prod',
    '  name: prod',
    'current-context: prod',
    'kind: Config',
    'preferences: {}',
    'users:',
    '- name: arn:aws:eks:eu-west-1:123456789012:cluster/prod',
    '  user:',
    '    exec:',
    '      apiVersion: client.authentication.k8s.io/v1beta1',
    '      args:',
    '      - --region',
    '      - eu-west-1',
    '      - eks',
    '      - get-token',
    '      command: aws',
    '      env: null',
    '      interactiveMode: IfAvailable',
    '      provideClusterInfo: false',
    '',
  ].join('\n'),
  'the yaml package (indented sequences), quoted strings, comments and blank lines': [
    '# written by a tool',
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '  - name: local',
    '    cluster:',
    "      server: 'https://127.0.0.1:39051'",
    '      certificate-authority: "/etc/kubernetes/pki/ca.crt"',
    '',
    'users:',
    "  - name: 'it''s me'",
    '    user:',
    '      token: eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJl',
    '      tokenFile: ~/token',
    'contexts:',
    '  - name: local',
    '    context: { }'.replace('{ }', '{}'),
    'current-context: local',
    'extensions: []',
  ].join('\n'),
};

/** Documents the fast path must leave to `yaml` (which reads them, or fails on them, in its own way). */
const notPlain: Record<string, string> = {
  'flow collections': 'clusters: [{ name: c, cluster: { server: x } }]\n',
  'a number': 'apiVersion: v1\nport: 6443\n',
  'a number-like name': 'current-context: 1e3\n',
  'a comment after a value': 'kind: Config # the kind\n',
  'an anchor and an alias': 'a: &x y\nb: *x\n',
  'a tag': 'a: !!str 1\n',
  'a block scalar': 'a: |\n  line\n',
  'a multi-line plain scalar': 'a: one\n  two\n',
  'a double-quoted escape': 'a: "tab\\there"\n',
  'a repeated key': 'a: x\na: y\n',
  'a document marker': '---\na: x\n',
  tabs: 'a:\n\t- x\n',
  'CRLF line ends': 'a: x\r\nb: y\r\n',
  'a null key': 'null: x\n',
  __proto__: '__proto__: x\n',
  'a sequence at the top': '- a\n- b\n',
  'a scalar at the top': 'hello\n',
  'an empty document': '\n# nothing\n',
  'two mappings on one line': 'a: b: c\n',
  'an indented first line': '  a: x\n',
  'a nested sequence': 'a:\n- - x\n',
  'an empty item': 'a:\n-\n- x\n',
  'broken YAML': 'a: [\n',
};

describe('kubectl bucket: the kubeconfig YAML fast path', () => {
  for (const [name, text] of Object.entries(plain)) {
    it(`takes the fast path, with yaml's result: ${name}`, () => {
      const fast = parseBlockYaml(text);
      expect(fast, 'fast path').to.not.equal(undefined);
      expect(fast?.value).to.deep.equal(yaml.parse(text));
      expect(parse(text)).to.deep.equal(yaml.parse(text));
    });
  }

  for (const [name, text] of Object.entries(notPlain)) {
    it(`leaves it to yaml, same value or same error: ${name}`, () => {
      expect(parseBlockYaml(text)).to.equal(undefined);
      let want: unknown;
      try {
        want = { value: yaml.parse(text) as unknown };
      } catch (err) {
        want = { error: (err as { code?: string }).code };
      }
      let got: unknown;
      try {
        got = { value: parse(text) };
      } catch (err) {
        got = { error: (err as { code?: string }).code };
      }
      expect(got).to.deep.equal(want);
    });
  }

  describe('agrees with yaml.parse (fast-check)', function () {
    // A few seconds each on a busy machine: yaml.stringify and yaml.parse run thousands of times.
    this.timeout(60_000);
    // Mostly what kubeconfigs hold, so that many documents take the fast path; among them the
    // words and characters YAML treats specially, so that the fast path is tried on them too.
    const usual = fc.constantFrom(
      'name',
      'cluster',
      'user',
      'server',
      'certificate-authority-data',
      'current-context',
      'exec',
      'args',
      'env',
      'a.b',
      'x/y',
      '_k',
      'K9',
    );
    const unusual = fc.constantFrom('null', 'True', 'FALSE', '__proto__', '~', 'y', '1', '-x', 'a b', 'a:b');
    const word = fc.oneof({ weight: 12, arbitrary: usual }, { weight: 1, arbitrary: unusual });
    const text = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.constantFrom(
          'https://127.0.0.1:6443',
          'arn:aws:eks:x:1:cluster/a',
          '--region',
          '~/token',
          'kind-kind',
          'LS0tLS1CRUdJTg==',
          'v1',
          'a b',
        ),
      },
      { weight: 2, arbitrary: word },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          'a: b',
          'a:',
          ' lead',
          'trail ',
          "it's",
          'say "hi"',
          '#x',
          'a #b',
          '1.5',
          '0x1F',
          '.inf',
          '',
          '-',
          '- x',
          '{}',
          '[]',
          'a,b',
          '@me',
          '%x',
          '!x',
          '&a',
          '*a',
          '|',
          '>',
          'a\\b',
          'Ünï',
          'x\ty',
          '~',
          '~x',
          '-1',
          '-.5',
          '--',
          '-a b',
        ),
      },
      {
        weight: 2,
        arbitrary: fc.string({
          unit: fc.constantFrom(
            'a',
            'Z',
            '0',
            '9',
            ' ',
            ':',
            '-',
            '.',
            '/',
            '#',
            "'",
            '"',
            '_',
            '@',
            '=',
            '+',
            '~',
            ',',
            '{',
            '[',
            '!',
            '&',
            '*',
            '%',
            '\\',
          ),
        }),
      },
    );
    const scalar = fc.oneof({ weight: 8, arbitrary: text }, fc.boolean(), fc.constant(null), fc.integer(), fc.double({ noNaN: true }));
    const value = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        scalar,
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(word, tie('node'), { maxKeys: 5 }),
      ),
    })).node;
    const doc = fc.dictionary(word, value, { minKeys: 1, maxKeys: 6 });
    const style = fc.record({
      indent: fc.constantFrom(2, 4),
      indentSeq: fc.boolean(),
      defaultStringType: fc.constantFrom('PLAIN' as const, 'QUOTE_SINGLE' as const, 'QUOTE_DOUBLE' as const),
      lineWidth: fc.constantFrom(0, 40),
    });

    it('what yaml.stringify writes, in its styles, reads the same or is left to yaml', () => {
      fc.assert(
        fc.property(doc, style, (d, s) => {
          const written = yaml.stringify(d, s);
          const fast = parseBlockYaml(written);
          if (fast) expect(fast.value, written).to.deep.equal(yaml.parse(written));
        }),
        { numRuns: 1000 },
      );
    });

    it('a kubeconfig-shaped document in any of those styles takes the fast path, with the same result', () => {
      const safeText = fc.constantFrom(
        'https://127.0.0.1:6443',
        'arn:aws:eks:x:1:cluster/a',
        '--region',
        '~/token',
        'kind-kind',
        'LS0tLS1CRUdJTg==',
        'v1',
        'a b',
        "it's",
        '',
      );
      // As in a kubeconfig: lists hold mappings or scalars, never lists.
      const safeValue = fc.letrec<{ node: unknown; map: unknown }>((tie) => ({
        node: fc.oneof(
          { depthSize: 'small', withCrossShrink: true },
          fc.oneof(safeText, fc.boolean(), fc.constant(null)),
          fc.array(fc.oneof(safeText, tie('map')), { maxLength: 4 }),
          tie('map'),
        ),
        map: fc.dictionary(usual, tie('node'), { maxKeys: 5 }),
      })).node;
      const safeStyle = fc.record({
        indent: fc.constantFrom(2, 4),
        indentSeq: fc.boolean(),
        defaultStringType: fc.constantFrom('PLAIN' as const, 'QUOTE_SINGLE' as const, 'QUOTE_DOUBLE' as const),
        defaultKeyType: fc.constant('PLAIN' as const),
        lineWidth: fc.constant(0),
      });
      fc.assert(
        fc.property(fc.dictionary(usual, safeValue, { minKeys: 1, maxKeys: 6 }), safeStyle, (d, s) => {
          const written = yaml.stringify(d, s);
          expect(parseBlockYaml(written)?.value, written).to.deep.equal(yaml.parse(written));
        }),
        { numRuns: 1000 },
      );
    });

    it('lines put together from kubeconfig fragments read the same or are left to yaml', () => {
      const fragment = fc.constantFrom(
        'a:',
        'a: x',
        'b: y',
        '- a: x',
        '- x',
        '-',
        '  ',
        '# c',
        'a: x # c',
        "a: 'x'",
        'a: "x"',
        'a: {}',
        'a: []',
        'a: null',
        'a: true',
        'a: 1',
        'a: b: c',
        'a:b',
        '- - x',
        'a: |',
        'a: &r x',
        '---',
      );
      const line = fc.tuple(fc.constantFrom('', ' ', '  ', '    ', '      '), fragment).map(([i, f]) => i + f);
      fc.assert(
        fc.property(fc.array(line, { minLength: 1, maxLength: 8 }), (lines) => {
          const written = lines.join('\n');
          const fast = parseBlockYaml(written);
          if (!fast) return;
          let want: unknown;
          try {
            want = yaml.parse(written);
          } catch (err) {
            expect.fail(`the fast path read ${JSON.stringify(written)} as ${JSON.stringify(fast.value)}, yaml fails: ${String(err)}`);
          }
          expect(fast.value, JSON.stringify(written)).to.deep.equal(want);
        }),
        { numRuns: 3000 },
      );
    });
  });
});
