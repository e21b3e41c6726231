import { InitialSchema1763769600000 } from './1763769600000-initial-schema';

/** Migrations in the order they run. Never edit one that has landed; add a new one. */
export const MIGRATIONS = [InitialSchema1763769600000];
