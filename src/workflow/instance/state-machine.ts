import { ConflictError } from '../../common/errors/app-error';

/** D34: the states of a workflow instance. */
export const INSTANCE_STATES = ['PENDING', 'RUNNING', 'PAUSED', 'COMPLETED', 'FAILED', 'CANCELLED'] as const;
export type InstanceState = (typeof INSTANCE_STATES)[number];

export const FINAL_STATES: ReadonlySet<InstanceState> = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);

/** What a user does to an instance through the routes (D33 and issue 12's approve/reject). */
export const INSTANCE_ACTIONS = ['pause', 'resume', 'cancel', 'approve', 'reject'] as const;
export type InstanceAction = (typeof INSTANCE_ACTIONS)[number];

/**
 * D34 as a table: the states each action is legal in, and the state it leads to. PENDING and
 * RUNNING pause; only PAUSED resumes (to RUNNING); every non-final state cancels; approve and
 * reject need a RUNNING instance (that it waits at an approval step is checked by the engine).
 * The engine's own moves (PENDING → RUNNING at the first step, RUNNING → COMPLETED | FAILED) are
 * not user actions.
 */
const TRANSITIONS: Readonly<Record<InstanceAction, Partial<Record<InstanceState, InstanceState>>>> = {
  pause: { PENDING: 'PAUSED', RUNNING: 'PAUSED' },
  resume: { PAUSED: 'RUNNING' },
  cancel: { PENDING: 'CANCELLED', RUNNING: 'CANCELLED', PAUSED: 'CANCELLED' },
  approve: { RUNNING: 'RUNNING' },
  reject: { RUNNING: 'RUNNING' },
};

export function isInstanceState(value: unknown): value is InstanceState {
  return typeof value === 'string' && (INSTANCE_STATES as readonly string[]).includes(value);
}

/** The state `action` leads to from `state`, or undefined when it is illegal there. */
export function nextState(state: InstanceState, action: InstanceAction): InstanceState | undefined {
  return TRANSITIONS[action][state];
}

/** The states `action` is legal in (for the 409's details). */
export function legalFrom(action: InstanceAction): InstanceState[] {
  return Object.keys(TRANSITIONS[action]) as InstanceState[];
}

/** The next state, or 409 CONFLICT with the current state in the details (D34). */
export function transition(id: number, state: InstanceState, action: InstanceAction): InstanceState {
  const next = nextState(state, action);
  if (next) return next;
  throw new ConflictError(
    `Cannot ${action} instance ${id}: it is ${state}`,
    { instanceId: id, status: state, action, allowedFrom: legalFrom(action) },
    'illegal_state',
  );
}
