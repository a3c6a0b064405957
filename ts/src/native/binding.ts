/**
 * The native addon, built from crates/toolgate-node by `npm run build:native`. Everything the
 * SDK does to the operating system goes through here.
 */
export * as native from '#native';
