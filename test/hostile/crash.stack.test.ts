/**
 * `kill -9` of the whole local stack during a create burst, as the attack pass did it: `npm start`'s
 * processes (the stack, the Functions host; Azurite in a group of its own) in a process group, on a data
 * folder of their own, killed with SIGKILL once half the creates are answered, then started again
 * on the same folder. Every project answered 201 must be there unchanged, no later create may get
 * an id that was already handed out, and every one's project.created event must reach the receiver
 * subscribed before the burst (this process's own, outside the group that is killed).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { readIdentityProviderInfo } from '../../local/identity/provider.js';
import { appRoot } from '../../local/stack.js';
import { startWebhookReceiver } from '../../tools/webhook-receiver.js';
import { requestAccessToken } from '../../tools/token.js';
import { hostileTest } from '../support/hostile-cases.js';
import { apiAt, inBatches } from '../support/raw-http.js';
import { logsAreClean } from '../support/secrets-and-logs.js';
import { HOME_TENANT } from '../support/stack.js';

const CREATES = 200;
const AT_ONCE = 8;
/** The kill comes once this many creates are answered 201: part-way through the burst. */
const KILL_AFTER = 100;
const CREATES_AFTER_RESTART = 40;
const START_TIMEOUT_MS = 45_000;
// Settings that would point the stack at real Azure resources: the test runs on embedded parts only.
const GIVEN_SETTINGS = /^(AUTH_|COSMOS_|GRAPH_|EMBEDDINGS_|RAG_|AzureWebJobs)/;

interface StackProcess {
  apiBaseUrl: string;
  child: ChildProcess;
  /** What the stack printed, for a failure's message. */
  output: string[];
}

/** The environment of `npm start` on embedded parts: free ports, this data folder, and every given setting blanked (an empty setting counts as not given). */
async function stackEnvironment(dataDir: string): Promise<NodeJS.ProcessEnv> {
  const environment = Object.fromEntries(Object.entries(process.env).filter(([name]) => !GIVEN_SETTINGS.test(name) && name !== 'NODE_EXTRA_CA_CERTS'));
  const settingsFile = await readFile(join(appRoot(), 'local.settings.json'), 'utf8').catch(() => '{}');
  const { Values = {} } = JSON.parse(settingsFile) as { Values?: Record<string, string> };
  for (const name of Object.keys(Values)) environment[name] = '';
  return { ...environment, PORT: '0', LOCAL_IDP_PORT: '0', LOCAL_DATA_DIR: dataDir };
}

/** `node dist/local/start.js` as the leader of a new process group, so that one signal reaches all its processes. */
async function startStackProcess(dataDir: string): Promise<StackProcess> {
  const child = spawn(process.execPath, [join(appRoot(), 'dist', 'local', 'start.js')], {
    detached: true,
    env: await stackEnvironment(dataDir),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const apiBaseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`The stack did not start within ${START_TIMEOUT_MS / 1000} s:\n${output.join('')}`)), START_TIMEOUT_MS);
    // Read to the end, always: a full pipe would stop the stack's processes when they log.
    for (const stream of [child.stdout, child.stderr]) {
      stream.setEncoding('utf8').on('data', (chunk: string) => {
        output.push(chunk);
        const ready = /The API is at (\S+)\n/.exec(output.join(''));
        if (ready) {
          clearTimeout(timer);
          resolve(ready[1]!);
        }
      });
    }
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`The stack exited (${signal ?? code}) before it was ready:\n${output.join('')}`));
    });
  });
  return { apiBaseUrl, child, output };
}

/** The processes that still run (a zombie has already run its last instruction), with their parent and process group. Linux /proc. */
async function runningProcesses(): Promise<{ parent: number; group: number }[]> {
  const running: { parent: number; group: number }[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // After the parenthesised name: state, parent id, process group id.
    const [state, parent, group] = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    if (stat && state !== 'Z') running.push({ parent: Number(parent), group: Number(group) });
  }
  return running;
}

/** Signals the stack's process group, and Azurite's, which is a group of its own (local/storage/azurite.ts): a crash takes it down too. */
async function signalGroup(stack: StackProcess, signal: NodeJS.Signals): Promise<void> {
  const groupId = stack.child.pid!;
  const children = (await runningProcesses()).filter(({ parent }) => parent === groupId);
  const groups = new Set([groupId, ...children.map(({ group }) => group)]);
  for (const group of groups) {
    try {
      process.kill(-group, signal);
    } catch {
      // gone already
    }
  }
  const deadline = Date.now() + 20_000;
  while ((await runningProcesses()).some(({ group }) => groups.has(group))) {
    if (Date.now() > deadline) throw new Error(`The stack's processes still run 20 s after ${signal}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function adminToken(dataDir: string): Promise<string> {
  const info = await readIdentityProviderInfo(join(dataDir, 'identity'));
  return requestAccessToken(info, {
    tenantId: HOME_TENANT,
    kind: 'user',
    roles: ['LMS.Admin'],
    username: 'crash@contoso.test',
    scope: 'access_as_user',
    version: 1,
  });
}

describe('the local stack killed with SIGKILL during a create burst', () => {
  let dataDir: string;
  const running: StackProcess[] = [];
  const outputs: string[][] = [];
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'lms-crash-test-'));
  });
  afterAll(async () => {
    for (const stack of running) await signalGroup(stack, 'SIGKILL');
    for (const cleanup of cleanups) await cleanup();
    await rm(dataDir, { recursive: true, force: true });
  });

  hostileTest(
    "keeps every acknowledged create, hands out no id twice, and delivers every acknowledged create's event",
    async (cases) => {
      const first = await startStackProcess(dataDir);
      running.push(first);
      outputs.push(first.output);
      const beforeCrash = apiAt(first.apiBaseUrl);
      const token = await adminToken(dataDir);
      // The receiver answers the first delivery, so that the relay's lease has a checkpoint; then, until the
      // kill, it keeps every attempt waiting: the relay's page with the second event hangs on it, and the
      // burst's events pile up unhanded. Only a restart that goes on from the lease's checkpoint hands
      // those over. After the kill, the receiver answers at once.
      let markKilled!: () => void;
      const afterKill = new Promise<number>((resolve) => (markKilled = () => resolve(200)));
      const receiver = await startWebhookReceiver({ answer: (_delivery, index) => (index === 0 ? 200 : afterKill) });
      cleanups.push(() => receiver.close());
      const subscribed = await beforeCrash('POST', '/webhooks', { token, body: { url: receiver.url, events: ['project.created'] } });
      expect(subscribed.status, subscribed.text).toBe(201);
      for (const name of ['Checkpointed', 'Hanging']) {
        const made = await beforeCrash('POST', '/projects', { token, body: { name } });
        expect(made.status, made.text).toBe(201);
        await receiver.waitFor((received) => received.some((delivery) => delivery.body.includes(made.body.id as string)));
      }

      const acknowledged = new Map<string, unknown>();
      let killed: Promise<void> | undefined;
      await inBatches(
        Array.from({ length: CREATES }, (_, index) => index),
        AT_ONCE,
        async (index) => {
          if (killed) return;
          try {
            const response = await beforeCrash('POST', '/projects', { token, body: { name: `Crash ${index}` }, timeoutMs: 15_000 });
            expect(response.status, response.text).toBe(201);
            acknowledged.set(response.body.id as string, response.body);
            if (acknowledged.size === KILL_AFTER) killed = signalGroup(first, 'SIGKILL').then(markKilled);
          } catch (error) {
            // A create the kill cut off was never acknowledged; before the kill, every create must succeed.
            if (!killed) throw error;
          }
        },
      );
      await killed;
      running.splice(running.indexOf(first), 1);
      cases.add(acknowledged.size);

      const second = await startStackProcess(dataDir);
      running.push(second);
      outputs.push(second.output);
      const afterRestart = apiAt(second.apiBaseUrl);
      const tokenAfter = await adminToken(dataDir);
      const survived = await inBatches([...acknowledged], AT_ONCE, async ([id, created]) => {
        const response = await afterRestart('GET', `/projects/${id}`, { token: tokenAfter });
        return response.status === 200 && JSON.stringify(response.body) === JSON.stringify(created);
      });
      const newIds = await inBatches(Array.from({ length: CREATES_AFTER_RESTART }), AT_ONCE, async () => {
        const response = await afterRestart('POST', '/projects', { token: tokenAfter, body: { name: 'After the crash' } });
        expect(response.status, response.text).toBe(201);
        return response.body.id as string;
      });
      const reused = newIds.filter((id) => acknowledged.has(id));
      console.log(
        `kill -9 during ${CREATES} creates, ${AT_ONCE} at a time: acknowledged ${acknowledged.size}, ` +
          `survived ${survived.filter(Boolean).length}, reused ids ${reused.length} of ${newIds.length} new creates`,
      );

      // The restarted host takes the relay's lease once the killed one's expires, and goes on from its checkpoint.
      const heardOf = (id: string) => receiver.received.some((delivery) => (JSON.parse(delivery.body) as { data: { id: string } }).data.id === id);
      await receiver.waitFor(() => [...acknowledged.keys(), ...newIds].every(heardOf), 60_000).catch(() => undefined);
      const unheard = [...acknowledged.keys()].filter((id) => !heardOf(id));
      const webhookIds = receiver.received.map((delivery) => delivery.headers['webhook-id']);
      const twice = webhookIds.length - new Set(webhookIds).size;
      console.log(`events: ${acknowledged.size - unheard.length} of ${acknowledged.size} acknowledged creates delivered, ${twice} twice`);

      await signalGroup(second, 'SIGTERM');
      running.splice(running.indexOf(second), 1);
      expect(survived.filter(Boolean).length, 'acknowledged projects readable and unchanged after the restart').toBe(acknowledged.size);
      expect(reused, 'ids handed out again after the restart').toEqual([]);
      expect(unheard, 'acknowledged creates whose event never arrived').toEqual([]);
      expect(
        newIds.filter((id) => !heardOf(id)),
        'creates after the restart whose event never arrived',
      ).toEqual([]);
    },
    150_000,
  );

  logsAreClean("the crashed and restarted stack's output", () => outputs.map((output) => output.join('')));
});
