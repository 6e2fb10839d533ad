import { expect } from 'chai';
import { mkdirSync, renameSync, rmSync, symlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { TokenFileSource } from '../../../operator/runtime/token-file';
import { scratch, type Scratch } from './rest-config-fixtures';

describe('TokenFileSource', () => {
  let s: Scratch;
  beforeEach(() => {
    s = scratch();
  });
  afterEach(() => s.cleanup());

  it('serves the trimmed token, and the new one once checkIntervalMs passed after a rewrite', async () => {
    let now = 0;
    const path = s.file('token', 'first\n');
    const src = new TokenFileSource(path, { checkIntervalMs: 1000, now: () => now });
    expect(await src.get()).to.deep.equal({ token: 'first' });
    s.file('token', 'second-token');
    now = 999;
    expect(await src.get(), 'the file is not looked at within checkIntervalMs').to.deep.equal({ token: 'first' });
    now = 1000;
    expect(await src.get()).to.deep.equal({ token: 'second-token' });
  });

  it('looks at the file at once after invalidate (the server answered 401)', async () => {
    const now = 0;
    const path = s.file('token', 'first');
    const src = new TokenFileSource(path, { now: () => now });
    expect(await src.get()).to.deep.equal({ token: 'first' });
    s.file('token', 'second-token');
    src.invalidate();
    expect(await src.get()).to.deep.equal({ token: 'second-token' });
  });

  it("follows the kubelet's atomic symlink swap of a projected token", async () => {
    // The kubelet's layout: token -> ..data/token, ..data -> ..<timestamp>; rotation swaps ..data.
    mkdirSync(join(s.dir, '..v1'));
    s.file('..v1/token', 'old');
    symlinkSync('..v1', join(s.dir, '..data'));
    symlinkSync('..data/token', join(s.dir, 'token'));
    let now = 0;
    const src = new TokenFileSource(join(s.dir, 'token'), { now: () => now });
    expect(await src.get()).to.deep.equal({ token: 'old' });
    mkdirSync(join(s.dir, '..v2'));
    s.file('..v2/token', 'new');
    symlinkSync('..v2', join(s.dir, '..data_tmp'));
    renameSync(join(s.dir, '..data_tmp'), join(s.dir, '..data'));
    rmSync(join(s.dir, '..v1'), { recursive: true });
    now = 1000;
    expect(await src.get()).to.deep.equal({ token: 'new' });
  });

  it('re-reads after maxAgeMs even when the file looks unchanged', async () => {
    let now = 0;
    const path = s.file('token', 'a');
    // Same inode, size and mtime before and after the rewrite, as on a filesystem with coarse
    // timestamps: only the age can tell.
    utimesSync(path, 1000, 1000);
    const src = new TokenFileSource(path, { maxAgeMs: 1000, now: () => now });
    expect(await src.get()).to.deep.equal({ token: 'a' });
    s.file('token', 'b');
    utimesSync(path, 1000, 1000);
    now = 999;
    expect(await src.get(), 'looks unchanged and is younger than maxAgeMs').to.deep.equal({ token: 'a' });
    now = 1000;
    expect(await src.get()).to.deep.equal({ token: 'b' });
  });

  it('keeps the last good token when the file disappears or empties', async () => {
    let now = 0;
    const path = s.file('token', 'good');
    const src = new TokenFileSource(path, { checkIntervalMs: 0, now: () => now });
    expect(await src.get()).to.deep.equal({ token: 'good' });
    s.file('token', '');
    now = 1;
    expect(await src.get()).to.deep.equal({ token: 'good' });
    rmSync(path);
    now = 2;
    expect(await src.get()).to.deep.equal({ token: 'good' });
  });

  const failures: Record<string, { content?: string; want: RegExp }> = {
    'a missing file': { want: /^cannot read token file .*\/token: ENOENT$/ },
    'an empty file': { content: ' \n', want: /^cannot read token file .*\/token: file is empty$/ },
  };
  for (const [name, tc] of Object.entries(failures)) {
    it(`fails with a one-line error on ${name} when no token was read yet`, async () => {
      const path = tc.content === undefined ? join(s.dir, 'token') : s.file('token', tc.content);
      const err = await new TokenFileSource(path).get().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(Error);
      expect((err as Error).message).to.match(tc.want);
    });
  }
});
