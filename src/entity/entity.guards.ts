import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { assertCanPerform } from '../profile/access/can-perform';
import { AppError, AuthorizationError, ValidationError } from '../common/errors/app-error';
import { entityCodeOf, ProfileLoaderService, profileNotFound } from '../profile/profile-loader.service';
import { RegistryService } from '../registry/registry.service';
import type { EntityInfo } from '../registry/registry.types';
import type { RecordAction as EntityAction } from '../profile/access/can-perform';

export const ENTITY_ACTION = 'mtb:entityAction';

/** The action a route performs on the entity (D22). */
export const EntityOperation = (action: EntityAction): MethodDecorator => SetMetadata(ENTITY_ACTION, action);

/** A bulk route (D51): its action is the body's `operation`. */
const FROM_BODY = 'fromBody';
export const EntityOperationFromBody = (): MethodDecorator => SetMetadata(ENTITY_ACTION, FROM_BODY);
const BODY_ACTIONS: ReadonlySet<string> = new Set<EntityAction>(['create', 'update', 'delete']);

const ENTITY_CODE = /^[a-z][a-z0-9_]{0,99}$/i;

/** The routes' @EntityOperation, read once per handler (a route's decorators never change). */
const actions = new WeakMap<object, EntityAction | typeof FROM_BODY | null>();
function routeAction(reflector: Reflector, handler: object): EntityAction | typeof FROM_BODY | undefined {
  let action = actions.get(handler);
  if (action === undefined) {
    action =
      reflector.get<EntityAction | typeof FROM_BODY | undefined>(ENTITY_ACTION, handler as () => unknown) ??
      null;
    actions.set(handler, action);
  }
  return action ?? undefined;
}

/** Chain step 2: entity info resolution (spec §4.3 rule 4, D20, D26). */
@Injectable()
export class EntityInfoGuard implements CanActivate {
  constructor(private readonly registry: RegistryService) {}

  canActivate(context: ExecutionContext): true | Promise<true> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const code = entityCodeOf(request);
    // Profile loader rule 1.
    if (!code) throw new ValidationError('Entity code is required in the path');
    if (!ENTITY_CODE.test(code) || !request.tenant) throw profileNotFound(`Entity ${code} not found`, code);
    // An entry held in memory is used without a promise; else the registry resolves it.
    const held = this.registry.peek(request.tenant.id, code);
    if (held !== undefined) return admitEntity(request, code, held ?? undefined);
    return this.registry
      .resolve(request.tenant.id, code)
      .then((entity) => admitEntity(request, code, entity));
  }
}

function admitEntity(request: FastifyRequest, code: string, entity: EntityInfo | undefined): true {
  if (!entity) throw profileNotFound(`Entity ${code} not found`, code);
  if (!entity.supported) {
    throw new AppError('NOT_IMPLEMENTED', `Entity ${code} is served by an unsupported database type (D26)`);
  }
  request.entity = entity;
  return true;
}

/** Chain step 3: the profile loader (spec §4.3 rules 1-10), its `middleware()` with the defaults. */
@Injectable()
export class ProfileLoaderGuard implements CanActivate {
  private readonly loadProfile: (request: FastifyRequest) => Promise<void>;

  constructor(private readonly loader: ProfileLoaderService) {
    this.loadProfile = loader.middleware();
  }

  canActivate(context: ExecutionContext): true | Promise<true> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    // After step 2 with a user: a profile held in memory is used without a promise (what the
    // middleware would attach); anything else goes through the middleware's rules.
    const { entity, tenant, user } = request;
    const held = entity && tenant && user ? this.loader.peekLoaded(entity, tenant.id) : undefined;
    if (held) {
      request.profile = held;
      return true;
    }
    return this.loadProfile(request).then(() => true as const);
  }
}

/**
 * Chain steps 4 and 5 (D21, D22): the one access decision, canPerform, for the route's action —
 * the maintained-by rule first, then role, profile, mode and object. A fast 403 before the
 * controller; the records use cases ask again and never trust that this ran.
 */
@Injectable()
export class EntityAccessGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const route = routeAction(this.reflector, context.getHandler());
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const { entity, profile, user } = request;
    if (!route || !entity || !profile || !user) throw new AuthorizationError('Entity access denied');
    // A bulk body without a known operation is the controller's 400; the use case asks again anyway.
    const action = route === FROM_BODY ? bodyOperation(request.body) : route;
    if (action) assertCanPerform(action, { entity, policy: profile.policy, user });
    return true;
  }
}

function bodyOperation(body: unknown): EntityAction | undefined {
  const op = body && typeof body === 'object' ? (body as { operation?: unknown }).operation : undefined;
  return typeof op === 'string' && BODY_ACTIONS.has(op) ? (op as EntityAction) : undefined;
}

/**
 * Spec §4.3's chain after the token, its four steps in their order, as one guard: the same checks
 * as four guards, without Nest's per-guard dispatch and a promise per step on every entity request.
 */
@Injectable()
export class EntityChainGuard implements CanActivate {
  constructor(
    private readonly entityInfo: EntityInfoGuard,
    private readonly profileLoader: ProfileLoaderGuard,
    private readonly entityAccess: EntityAccessGuard,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    // Each step answers true or throws the refusal; a step answers without a promise when what it
    // needs is held in memory, and the chain stays synchronous as long as they do.
    const info = this.entityInfo.canActivate(context);
    return info === true ? this.fromProfile(context) : info.then(() => this.fromProfile(context));
  }

  private fromProfile(context: ExecutionContext): boolean | Promise<boolean> {
    const profile = this.profileLoader.canActivate(context);
    return profile === true
      ? this.access(context)
      : Promise.resolve(profile).then(() => this.access(context));
  }

  private access(context: ExecutionContext): boolean {
    return this.entityAccess.canActivate(context);
  }
}

/** Every entity route uses exactly this chain. */
export const ENTITY_CHAIN = [EntityChainGuard];
