import type { LoadedProfile } from '../profile/profile-loader.service';
import type { EntityInfo } from '../registry/registry.types';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by EntityInfoGuard (spec §4.3 chain step 2). */
    entity?: EntityInfo;
    /** Set by ProfileLoaderGuard (step 3). */
    profile?: LoadedProfile;
  }
}

export type EntityAction = 'read' | 'create' | 'update' | 'delete' | 'export';
