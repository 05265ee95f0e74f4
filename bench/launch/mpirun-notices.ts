// mpirun's stderr as collbench passes it on: Open MPI's help banners (text between lines of dashes) that collbench
// explains in a line of its own (a rank that died or failed, daemons that could not start) are held back; everything
// else, the ranks' own lines first, passes through as it comes. Open MPI's -q would hide the notices collbench reads.

/** The delimiter of an Open MPI help banner (orte_show_help): a line of dashes only. */
const RULE = /^-{20,}$/;

/** Banners collbench replaces by its own line (Open MPI 4.1's wording). */
const EXPLAINED = [
  /^Primary job\s+terminated normally, but \d+ process(?:es)? returned/m,
  /^mpirun noticed that process rank \d+/m,
  /^mpirun detected that one or more processes exited with non-zero status/m,
  /^ORTE was unable to reliably start one or more daemons/m,
];

/** Reads mpirun's stderr in chunks; `pass` gets what is to be printed, in order. */
export class MpirunNotices {
  private partial = '';
  private block: string[] | null = null;
  /** Every line read, banners included, for the notices' parsers (the last 64 KiB). */
  text = '';
  /** Whether a banner was held back (collbench must then say what happened). */
  held = false;

  constructor(private readonly pass: (text: string) => void) {}

  push(chunk: string): void {
    this.text = (this.text + chunk).slice(-65536);
    const lines = (this.partial + chunk).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) this.line(line);
    // A terminal redraw (rank 0's progress bar: carriage returns and escapes, no newline) passes at once; it is never
    // part of a banner.
    // eslint-disable-next-line no-control-regex -- terminal escapes are what is looked for
    if (this.block === null && /[\r\u001b]/.test(this.partial)) {
      this.pass(this.partial);
      this.partial = '';
    }
  }

  /** The end of the stream: a half line, or a banner that never closed, is printed as it is. */
  end(): void {
    if (this.block) this.pass(this.block.map((l) => l + '\n').join(''));
    this.block = null;
    if (this.partial !== '') this.pass(this.partial);
    this.partial = '';
  }

  private line(line: string): void {
    if (this.block === null) {
      if (RULE.test(line)) this.block = [line];
      else this.pass(line + '\n');
      return;
    }
    this.block.push(line);
    if (!RULE.test(line)) return;
    if (this.block.length === 2) {
      // two rules in a row: the second opens the next banner
      this.pass(this.block[0] + '\n');
      this.block = [line];
      return;
    }
    const body = this.block.slice(1, -1).join('\n');
    if (EXPLAINED.some((re) => re.test(body))) this.held = true;
    else this.pass(this.block.map((l) => l + '\n').join(''));
    this.block = null;
  }
}

/** mpirun could not start its daemons on the --hosts hosts (ssh failed, say): the reason ssh gave, or null. */
export function daemonFailure(text: string): { reason: string | null } | null {
  if (!/ORTE was unable to reliably start one or more daemons/.test(text)) return null;
  const ssh =
    /^(ssh: .+|.*(?:Permission denied|Host key verification failed|Connection refused|No route to host).*)$/m.exec(
      text,
    );
  return { reason: ssh ? ssh[1]!.trim() : null };
}

/** collbench's line for a daemon start failure. */
export function daemonFailureLine(hosts: string | null, reason: string | null): string {
  return (
    `collbench: mpirun could not start its daemons on ${hosts !== null ? `--hosts ${hosts}` : 'the hosts'}` +
    `${reason !== null ? ` (${reason})` : ''}; every host must be reachable by ssh without a password and have Node.js, ` +
    'collbench and Open MPI at the same paths as here'
  );
}
