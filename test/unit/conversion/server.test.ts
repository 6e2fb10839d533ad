import { expect } from 'chai';
import { Agent, request } from 'node:https';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import * as v1 from '../../../operator/api/v1';
import * as v2 from '../../../operator/api/v2';
import { BucketMetric } from '../../../operator/api/metric-names';
import { serviceDnsNames } from '../../../operator/conversion/certificates';
import { ConversionMetrics } from '../../../operator/conversion/metrics';
import { DEFAULT_CERT_POLICY } from '../../../operator/conversion/rotation';
import { applyRotation, CertSecretKey, servingCredentials, type CertData, type ServingNames } from '../../../operator/conversion/secret-certs';
import { ConversionServer } from '../../../operator/conversion/server';

const names: ServingNames = {
  commonName: 'bucketoperator-webhook',
  dnsNames: serviceDnsNames('bucketoperator-webhook', 'ns'),
  ipAddresses: ['127.0.0.1'],
};
const logger = pino({ level: 'silent' });

const bucket: v1.StorageBucket = {
  apiVersion: v1.API_VERSION,
  kind: 'StorageBucket',
  metadata: { name: 'logs', namespace: 'team-a' },
  spec: { region: 'eu-west-1', sizeGB: 3, providerRef: { name: 'default' } },
};

function reviewBody(uid: string, objects: unknown[] = [bucket], desired = v2.API_VERSION): string {
  return JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid, desiredAPIVersion: desired, objects } });
}

interface Reply {
  readonly status: number;
  readonly body: string;
}

/** POSTs `body` to the server over TLS, trusting only `ca`. `slowMs` sends the body in two halves that far apart. */
function post(
  port: number,
  ca: string,
  body: string,
  opts: { agent?: Agent; path?: string; method?: string; slowMs?: number; type?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: opts.path ?? '/convert',
        method: opts.method ?? 'POST',
        ca,
        agent: opts.agent ?? false,
        headers: { 'content-type': opts.type ?? 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (opts.slowMs) {
      const half = Math.floor(body.length / 2);
      req.write(body.slice(0, half));
      setTimeout(() => req.end(body.slice(half)), opts.slowMs);
    } else {
      req.end(body);
    }
  });
}

/** What the server is given from `data`, and the CA bundle a client trusts it by. */
function creds(data: CertData): { cert: string; key: string; caBundle: string } {
  const c = servingCredentials(data);
  const caBundle = data[CertSecretKey.caBundle];
  if (!c || !caBundle) throw new Error('no credentials');
  return { ...c, caBundle };
}

async function counter(registry: Registry, labels: Record<string, string>): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === BucketMetric.conversionRequests);
  const values = (metric?.values ?? []) as Array<{ value: number; labels: Record<string, string | number> }>;
  return values.filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want)).reduce((sum, v) => sum + v.value, 0);
}

describe('conversion webhook server (real TLS over loopback)', () => {
  let registry: Registry;
  let server: ConversionServer;
  let port = 0;
  let data: CertData;

  beforeEach(async () => {
    registry = new Registry();
    server = new ConversionServer({ metrics: new ConversionMetrics({ registry }), logger });
    data = applyRotation({ kind: 'create', reason: 'test' }, undefined, Date.now(), DEFAULT_CERT_POLICY, names);
    port = (await server.listen(0, '127.0.0.1')).port;
  });
  afterEach(() => server.stop(100));

  it('is not ready and completes no handshake before a certificate is loaded; then is ready and converts', async () => {
    expect(() => server.readyCheck()).to.throw(/no serving certificate loaded/);
    let failed = false;
    await post(port, creds(data).caBundle, reviewBody('u-0')).catch(() => (failed = true));
    expect(failed).to.equal(true);
    expect(server.setCertificate(creds(data))).to.equal(true);
    expect(server.setCertificate(creds(data)), 'the same certificate again changes nothing').to.equal(false);
    expect(() => server.readyCheck()).to.not.throw();
    const reply = await post(port, creds(data).caBundle, reviewBody('u-1'));
    expect(reply.status).to.equal(200);
    const review = JSON.parse(reply.body) as { response: { uid: string; convertedObjects: v2.StorageBucket[]; result: { status: string } } };
    expect(review.response.uid).to.equal('u-1');
    expect(review.response.result.status).to.equal('Success');
    expect(review.response.convertedObjects[0]?.spec.forProvider.size).to.equal('3G');
  });

  it('a client that trusts another CA cannot talk to it', async () => {
    server.setCertificate(creds(data));
    const other = applyRotation({ kind: 'create', reason: 'test' }, undefined, Date.now(), DEFAULT_CERT_POLICY, names);
    const err = await post(port, creds(other).caBundle, reviewBody('u')).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.match(/self[- ]signed|unable to verify|certificate/i);
  });

  it('refuses a key that does not match the certificate, keeping the one it serves', async () => {
    server.setCertificate(creds(data));
    const other = applyRotation({ kind: 'create', reason: 'test' }, undefined, Date.now(), DEFAULT_CERT_POLICY, names);
    expect(() => server.setCertificate({ cert: creds(other).cert, key: creds(data).key })).to.throw(/do not load as a pair$/);
    expect((await post(port, creds(data).caBundle, reviewBody('u'))).status).to.equal(200);
  });

  describe('answers', () => {
    beforeEach(() => server.setCertificate(creds(data)));
    const cases: Record<string, { body: string; opts?: Parameters<typeof post>[3]; want: { status: number; body: RegExp } }> = {
      'another path: 404': { body: '{}', opts: { path: '/metrics' }, want: { status: 404, body: /serves POST \/convert/ } },
      'GET: 405': { body: '', opts: { method: 'GET' }, want: { status: 405, body: /takes POST/ } },
      'not JSON: 400': { body: 'not json', want: { status: 400, body: /not JSON/ } },
      'another content type: 415': { body: '{}', opts: { type: 'text/yaml' }, want: { status: 415, body: /application\/json/ } },
      'not a ConversionReview: 400 with the reason': { body: '{"kind":"AdmissionReview"}', want: { status: 400, body: /not a ConversionReview/ } },
      'a refused object: 200 with a Failure result': {
        body: reviewBody('u-2', [{ ...bucket, spec: {} }]),
        want: { status: 200, body: /"uid":"u-2".*"status":"Failure","message":"conversion webhook: object 0 \(team-a\/logs\)/ },
      },
    };
    for (const [name, { body, opts, want }] of Object.entries(cases)) {
      it(name, async () => {
        const reply = await post(port, creds(data).caBundle, body, opts);
        expect(reply.status).to.equal(want.status);
        expect(reply.body).to.match(want.body);
      });
    }

    it('a body over the cap: 413, before it is read', async () => {
      await server.stop(100);
      server = new ConversionServer({
        metrics: new ConversionMetrics({ registry: new Registry() }),
        logger,
        limits: { maxBodyBytes: 1000, maxInFlightBytes: 1000 },
      });
      server.setCertificate(creds(data));
      port = (await server.listen(0, '127.0.0.1')).port;
      const big = reviewBody(
        'u',
        Array.from({ length: 20 }, () => bucket),
      );
      const reply = await post(port, creds(data).caBundle, big);
      expect(reply.status).to.equal(413);
      expect((await post(port, creds(data).caBundle, reviewBody('u'))).status).to.equal(200);
    });

    it('a handler error is a 500 and counted, and the server keeps serving', async () => {
      await server.stop(100);
      let calls = 0;
      registry = new Registry();
      server = new ConversionServer({
        metrics: new ConversionMetrics({ registry }),
        logger,
        review: () => {
          if (calls++ === 0) throw new Error('boom');
          return { kind: 'invalid', pair: { from: 'unknown', to: 'unknown' }, message: 'second' };
        },
      });
      server.setCertificate(creds(data));
      port = (await server.listen(0, '127.0.0.1')).port;
      expect((await post(port, creds(data).caBundle, '{}')).status).to.equal(500);
      expect((await post(port, creds(data).caBundle, '{}')).status).to.equal(400);
      expect(await counter(registry, { result: 'error' })).to.equal(1);
    });
  });

  it('counts requests and their latency by version pair and result', async () => {
    server.setCertificate(creds(data));
    const ca = creds(data).caBundle;
    for (let i = 0; i < 3; i++) await post(port, ca, reviewBody(`a${i}`));
    await post(
      port,
      ca,
      reviewBody(
        'b',
        [{ ...bucket, apiVersion: v2.API_VERSION, spec: { forProvider: { region: 'r', size: '5G' }, providerConfigRef: { name: 'd' } } }],
        v1.API_VERSION,
      ),
    );
    await post(port, ca, reviewBody('c', [{ ...bucket, spec: {} }]));
    await post(port, ca, 'nope');
    expect(await counter(registry, { from: 'v1', to: 'v2', result: 'success' })).to.equal(3);
    expect(await counter(registry, { from: 'v2', to: 'v1', result: 'success' })).to.equal(1);
    expect(await counter(registry, { from: 'v1', to: 'v2', result: 'failure' })).to.equal(1);
    expect(await counter(registry, { from: 'unknown', to: 'unknown', result: 'invalid' })).to.equal(1);
    const text = await registry.metrics();
    expect(text).to.match(new RegExp(`${BucketMetric.conversionDuration}_count\\{from="v1",to="v2"\\} 4`));
  });

  it('a full CA rotation under constant traffic, with a request in flight across each swap: zero failed requests', async function () {
    this.timeout(30_000);
    server.setCertificate(creds(data));
    // What the API server trusts: the caBundle, updated before the serving certificate changes (the planner's order).
    let trust = creds(data).caBundle;
    const firstCa = trust;
    let stop = false;
    let ok = 0;
    const failures: string[] = [];
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 2 });
    const client = async (id: number) => {
      for (let i = 0; !stop; i++) {
        const uid = `c${id}-${i}`;
        // Half the clients reuse connections (the API server does), half make new ones.
        const agent = id % 2 === 0 ? keepAlive : undefined;
        try {
          const reply = await post(port, trust, reviewBody(uid), agent ? { agent } : {});
          const review = JSON.parse(reply.body) as { response?: { uid: string; result: { status: string } } };
          if (reply.status !== 200 || review.response?.uid !== uid || review.response.result.status !== 'Success')
            failures.push(`${uid}: ${reply.status}`);
          else ok++;
        } catch (err) {
          failures.push(`${uid}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    };
    const clients = [0, 1, 2, 3].map(client);
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const slow: Promise<Reply>[] = [];
    const now = Date.now();
    for (const kind of ['addCa', 'issueServing', 'dropOldCas', 'issueServing'] as const) {
      await pause(150);
      // A request whose body is still arriving while the certificate changes.
      slow.push(post(port, trust, reviewBody(`slow-${kind}`), { slowMs: 300 }));
      await pause(50);
      data = applyRotation(kind === 'issueServing' ? { kind, reason: 'test' } : { kind }, data, now, DEFAULT_CERT_POLICY, names);
      trust = creds(data).caBundle;
      server.setCertificate(creds(data));
    }
    await pause(200);
    stop = true;
    await Promise.all(clients);
    keepAlive.destroy();
    const slowReplies = await Promise.all(slow);
    expect(failures).to.deep.equal([]);
    expect(slowReplies.map((r) => r.status)).to.deep.equal([200, 200, 200, 200]);
    expect(ok).to.be.greaterThan(20);
    // The rotation really moved to a new CA: the first CA is gone from what clients trust.
    expect(trust.match(/BEGIN CERTIFICATE/g)).to.have.length(1);
    expect(data[CertSecretKey.caBundle]).to.not.include(firstCa);
  });

  it('draining: not ready, still answering, and every answer closes its connection', async () => {
    server.setCertificate(creds(data));
    server.drain();
    expect(() => server.readyCheck()).to.throw(/shutting down/);
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/convert', method: 'POST', ca: creds(data).caBundle, agent: new Agent({ keepAlive: true }) },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection }));
        },
      );
      req.on('error', reject);
      req.setHeader('content-type', 'application/json');
      req.end(reviewBody('d'));
    });
    expect(headers).to.deep.equal({ status: 200, connection: 'close' });
  });

  it('stop lets a request in flight finish', async () => {
    server.setCertificate(creds(data));
    const inFlight = post(port, creds(data).caBundle, reviewBody('late'), { slowMs: 200 });
    await new Promise((r) => setTimeout(r, 50));
    await server.stop(5_000);
    expect((await inFlight).status).to.equal(200);
  });
});

describe('conversion webhook replicas behind one Service address', () => {
  it('a replica stopped gracefully (drain, then stop) while traffic flows and certificates rotate: zero failed requests', async function () {
    this.timeout(30_000);
    let data = applyRotation({ kind: 'create', reason: 'test' }, undefined, Date.now(), DEFAULT_CERT_POLICY, names);
    const served = [0, 0];
    const replicas = [0, 1].map(
      (i) => new ConversionServer({ metrics: { observe: (_p, result) => (served[i]! += result === 'success' ? 1 : 0) }, logger }),
    );
    for (const r of replicas) r.setCertificate(creds(data));
    const ports = await Promise.all(replicas.map(async (r) => (await r.listen(0, '127.0.0.1')).port));
    // kube-proxy's part: each new connection goes to a replica that is ready; a connection stays where it went.
    let next = 0;
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const connect = agent.createConnection.bind(agent);
    agent.createConnection = (options, callback) => {
      const ready = replicas
        .map((r, i) => ({ r, i }))
        .filter(({ r }) => {
          try {
            r.readyCheck();
            return true;
          } catch {
            return false;
          }
        });
      const pick = ready[next++ % ready.length]!;
      return connect({ ...options, port: ports[pick.i] }, callback);
    };
    let trust = creds(data).caBundle;
    let stop = false;
    const failures: string[] = [];
    const loop = async (id: number) => {
      for (let i = 0; !stop; i++) {
        try {
          const reply = await post(ports[1]!, trust, reviewBody(`r${id}-${i}`), { agent });
          if (reply.status !== 200) failures.push(`${id}-${i}: ${reply.status}`);
        } catch (err) {
          failures.push(`${id}-${i}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    };
    const loops = [0, 1, 2, 3].map(loop);
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const rotate = (kind: 'addCa' | 'issueServing' | 'dropOldCas') => {
      data = applyRotation(kind === 'issueServing' ? { kind, reason: 'test' } : { kind }, data, Date.now(), DEFAULT_CERT_POLICY, names);
      trust = creds(data).caBundle;
      for (const r of replicas) r.setCertificate(creds(data));
    };
    await pause(200);
    rotate('addCa');
    await pause(100);
    // SIGTERM on replica 0 in the middle of the rotation: drain while endpoints update, then stop.
    replicas[0]!.drain();
    rotate('issueServing');
    await pause(300);
    const beforeStop = served[0]!;
    await replicas[0]!.stop(5_000);
    rotate('dropOldCas');
    const afterStop = served[1]!;
    await pause(300);
    stop = true;
    await Promise.all(loops);
    agent.destroy();
    await replicas[1]!.stop(100);
    expect(failures).to.deep.equal([]);
    expect(beforeStop, 'replica 0 served before it stopped').to.be.greaterThan(0);
    expect(served[1]! - afterStop, 'replica 1 served the rest').to.be.greaterThan(0);
  });
});
