import { expect } from 'chai';
import { newControllerManagedBy } from '../../../operator/runtime/builder';
import { KeyChannel } from '../../../operator/runtime/controller';
import { done, type Reconciler, type Request } from '../../../operator/runtime/reconcile';
import { FakeInformerSource, captureLogger, settle, standalone, testKind } from './fakes';
import { eventually, IN_PROCESS } from '../../support/eventually';

const Widget = testKind('Widget');

describe('KeyChannel (keys sent from outside the informers)', () => {
  it('enqueues what is sent while the controller runs, merged like any other key, and nothing before or after', async () => {
    const seen: Request[] = [];
    const reconciler: Reconciler = { reconcile: async (req) => (seen.push(req), done()) };
    const channel = new KeyChannel();
    const source = new FakeInformerSource();
    // A cached primary: its reconcile shows the controller is running.
    source.informer(Widget).objects.set('ns/first', { metadata: { namespace: 'ns', name: 'first' } });
    const controller = newControllerManagedBy(standalone({ informers: source, logger: captureLogger().logger }), 'widgets')
      .for(Widget)
      .watchesChannel(channel)
      .complete(reconciler);
    channel.send({ namespace: 'ns', name: 'early' });
    const ac = new AbortController();
    const running = controller.start(ac.signal);
    await eventually(() => seen.length === 1, IN_PROCESS);
    channel.send({ namespace: 'ns', name: 'a' });
    await eventually(() => seen.length === 2, IN_PROCESS);
    ac.abort();
    await running;
    channel.send({ namespace: 'ns', name: 'late' });
    await settle();
    expect(seen).to.deep.equal([
      { namespace: 'ns', name: 'first' },
      { namespace: 'ns', name: 'a' },
    ]);
  });

  it('reaches every subscriber until it unsubscribes', () => {
    const channel = new KeyChannel();
    const got: string[] = [];
    const off = channel.subscribe((k) => got.push(`1:${k.name}`));
    channel.subscribe((k) => got.push(`2:${k.name}`));
    channel.send({ namespace: '', name: 'x' });
    off();
    channel.send({ namespace: '', name: 'y' });
    expect(got).to.deep.equal(['1:x', '2:x', '2:y']);
  });
});
