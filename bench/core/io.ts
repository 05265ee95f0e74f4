// Where a command's lines go, the one IO type of every layer: stdout and stderr as two plain functions (passed
// around on their own, never called as methods). cli/main.ts writes them to the file descriptors; tests collect them.
export interface IO {
  out: (line: string) => void;
  err: (line: string) => void;
}
