import { native } from './binding.js';
import { callNative } from './errors.js';
import { terminalText } from './terminal-text.js';

/** How strictly a sandbox is required. */
export type SandboxMode = 'enforce' | 'best-effort' | 'off';

/**
 * `network` by host: only the hosts `allow` names (`example.com`, `*.example.com`,
 * `host:port`, IP addresses and CIDR ranges with an optional `:port`, `[v6]:port`), never those
 * `deny` names (deny wins), through toolgate's egress proxy; with `ask`, other hosts go to the
 * run's approval handler (`toolName: 'network'`, `input: { host, port, tool }`). Internal
 * addresses (loopback, private, link-local, metadata) only when the address itself is allowed.
 * See docs/sandbox.md, "Network by host".
 */
export interface NetworkHosts {
  allow?: readonly string[];
  deny?: readonly string[];
  ask?: boolean;
}

/**
 * Each call's limits (whole numbers from 1); an absent one has its default: 512 processes,
 * 4096 MiB of memory, a 512 MiB private tmpfs, no CPU limit, files up to 1024 MiB.
 */
export interface SandboxLimits {
  processes?: number;
  memoryMb?: number;
  tmpMb?: number;
  cpuSeconds?: number;
  fileSizeMb?: number;
}

/**
 * The kernel sandbox of every process a tool starts (a view of the file system of its own,
 * Landlock, seccomp, PID/IPC/network namespaces, limits). Default: `{ mode: 'enforce',
 * network: false }` — the work directory read-write, the system runtime read-only, nothing
 * else, no network. `false` turns it off; `'best-effort'` runs with what the kernel offers and
 * warns once; the object form widens it with `network` (`true`, or by host:
 * `{ allow, deny, ask }`) and extra `read`/`write` roots
 * (absolute, relative to `workDir`, or under `~/`), `protect` makes more paths read-only for
 * processes (gitignore-style patterns relative to `workDir`, on top of the work directory's git
 * hooks and config, which are always protected), and `limits` bounds each call. The core reads it
 * strictly (`CONFIG_INVALID` for an unknown key). See docs/sandbox.md.
 */
export type SandboxOption =
  | false
  | 'enforce'
  | 'best-effort'
  | {
      mode?: SandboxMode;
      /** `false` (default): none; `true`: every host; `{ allow, deny, ask }`: by host, through the egress proxy. */
      network?: boolean | NetworkHosts;
      read?: readonly string[];
      write?: readonly string[];
      protect?: readonly string[];
      limits?: SandboxLimits;
    };

/** An effective sandbox policy, as the core decided it. */
export type SandboxSummary = native.SandboxSummary;

/** What this kernel offers the sandbox, and where its launcher is. */
export type SandboxSupport = native.SandboxSupport;

const warned = new Set<string>();

/**
 * Emits the core's one best-effort sandbox warning (it hands it out once per process) as a
 * Node warning with code `TOOLGATE_SANDBOX`.
 */
export function warnSandbox(message: string | null | undefined): void {
  if (!message || warned.has(message)) return;
  warned.add(message);
  process.emitWarning(terminalText(message), { code: 'TOOLGATE_SANDBOX' });
}

/** Probes the kernel (Landlock ABI, seccomp, user and PID namespaces) and finds the launcher. */
export function sandboxSupport(): SandboxSupport {
  return callNative(() => native.sandboxSupport());
}

/** The effective sandbox of a work directory with `sandbox` applied (defaults otherwise). */
export function sandboxPolicy(options: { workDir?: string; sandbox?: SandboxOption } = {}): SandboxSummary {
  return callNative(() => native.sandboxPolicy(options));
}
