/** Sessions: opaque platform ids, each bound to one environment for life on first use. */
export { type BindOutcome, bindSession } from './bind-session.js';
