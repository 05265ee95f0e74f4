// collbench's version, printed in the preamble and by --version (keep equal to package.json).
export const VERSION = '0.1.0';
