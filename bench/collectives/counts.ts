// Element counts every descriptor derives from a size (nccl-tests' getCollByteCount arithmetic): the whole-
// buffer count and the 16-byte-rounded per-rank chunk. Below descriptor.ts and alltoallv-plan.ts, which both use them.

/** Elements per 16 bytes: the per-rank chunk granularity of nccl-tests (16 for 1-byte types). */
export function chunkAlignElems(dtypeBytes: number): number {
  return Math.max(1, Math.floor(16 / dtypeBytes));
}

/** c = floor(S / ts): the count of the whole-buffer collectives. */
export function totalElems(sizeBytes: number, dtypeBytes: number): number {
  checkSizeArgs(sizeBytes, dtypeBytes);
  return Math.floor(sizeBytes / dtypeBytes);
}

/**
 * b = floor(c / n) rounded down to a multiple of 16 bytes' worth of elements: the per-rank chunk of
 * the chunked collectives (nccl-tests: `(count/nranks) & ~(16/eltSize - 1)`).
 */
export function chunkElems(sizeBytes: number, dtypeBytes: number, nranks: number): number {
  checkRanks(nranks);
  const per = Math.floor(totalElems(sizeBytes, dtypeBytes) / nranks);
  return per - (per % chunkAlignElems(dtypeBytes));
}

export function checkRanks(nranks: number): void {
  if (!Number.isInteger(nranks) || nranks < 1) throw new RangeError(`invalid rank count ${nranks}`);
}

function checkSizeArgs(sizeBytes: number, dtypeBytes: number): void {
  if (!Number.isSafeInteger(sizeBytes) || sizeBytes < 0) throw new RangeError(`invalid size ${sizeBytes} B`);
  if (!Number.isInteger(dtypeBytes) || dtypeBytes < 1) throw new RangeError(`invalid element size ${dtypeBytes} B`);
}
