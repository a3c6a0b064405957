import { native } from './binding.js';

/**
 * The defaults, limits and names of toolgate, as the Rust core defines them. Read once; the
 * SDK never restates them.
 */
export const LIMITS: native.Constants = native.constants();
