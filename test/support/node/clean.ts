/**
 * `tsx test/support/node/clean.ts`: undoes what a node left behind when its process died
 * (killed, or the machine's power cut), as the next startNode() would. Takes the node lock
 * first, so a running node is never cleaned away under its owner.
 */
import { cacheRoot, resolveNodeBinaries } from './binaries';
import { cleanUp } from './cleanup';
import { describeStep } from './cleanup-plan';
import { readJournal, removeJournal } from './journal';
import { nodeLayout } from './layout';
import { acquireLock } from './lock';

async function main(): Promise<void> {
  const layout = nodeLayout(cacheRoot());
  const lock = await acquireLock(layout.lockFile, 0);
  try {
    const journal = await readJournal(layout.journalFile);
    if (!journal) {
      console.log(`no node journal in ${layout.journalFile}: nothing to clean`);
      return;
    }
    const binaries = await resolveNodeBinaries();
    console.log(`cleaning up after the node of process ${journal.ownerPid} (started ${journal.startedAt})`);
    await cleanUp(journal, { nft: binaries.nft, kubeProxy: binaries.kubeProxy }, { onStep: (step) => console.log(`  ${describeStep(step)}`) });
    await removeJournal(layout.journalFile);
    console.log('done');
  } finally {
    await lock.release();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
