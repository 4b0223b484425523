// The command table, composed once from its peers (jobs, tubes, stats,
// rooms); the compiler checks it covers every command of
// protocol/commands.json with the argument types the spec gives them.
import { roomHandlers } from '../rooms/commands.js';
import { authHandlers } from './auth.js';
import { jobBatchRules, jobHandlers } from './jobs.js';
import type { BatchRules, Handlers } from './session.js';
import { statsHandlers } from './stats.js';
import { tubeHandlers } from './tubes.js';

export const HANDLERS: Handlers = { ...jobHandlers, ...tubeHandlers, ...statsHandlers, ...roomHandlers, ...authHandlers };

export const BATCH_RULES: BatchRules = { ...jobBatchRules };
