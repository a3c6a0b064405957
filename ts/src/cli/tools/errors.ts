/** A command line that `toolgate tools` cannot act on; it prints the usage. */
export class UsageError extends Error {}
