import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { canPerform, maintainedByAllows } from '../profile/access/can-perform';
import { AppError, AuthorizationError, ValidationError } from '../common/errors/app-error';
import { entityCodeOf, ProfileLoaderService, profileNotFound } from '../profile/profile-loader.service';
import { RegistryService } from '../registry/registry.service';
import type { RecordAction as EntityAction } from '../profile/access/can-perform';

export const ENTITY_ACTION = 'mtb:entityAction';

/** The action a route performs on the entity (D22). */
export const EntityOperation = (action: EntityAction): MethodDecorator => SetMetadata(ENTITY_ACTION, action);

const ENTITY_CODE = /^[a-z][a-z0-9_]{0,99}$/i;

/** Chain step 2: entity info resolution (spec §4.3 rule 4, D20, D26). */
@Injectable()
export class EntityInfoGuard implements CanActivate {
  constructor(private readonly registry: RegistryService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const code = entityCodeOf(request);
    // Profile loader rule 1.
    if (!code) throw new ValidationError('Entity code is required in the path');
    if (!ENTITY_CODE.test(code) || !request.tenant) throw profileNotFound(`Entity ${code} not found`, code);
    const entity = await this.registry.resolve(request.tenant.id, code);
    if (!entity) throw profileNotFound(`Entity ${code} not found`, code);
    if (!entity.supported) {
      throw new AppError('NOT_IMPLEMENTED', `Entity ${code} is served by an unsupported database type (D26)`);
    }
    request.entity = entity;
    return true;
  }
}

/** Chain step 3: the profile loader (spec §4.3 rules 1-10), its `middleware()` with the defaults. */
@Injectable()
export class ProfileLoaderGuard implements CanActivate {
  private readonly loadProfile: (request: FastifyRequest) => Promise<void>;

  constructor(loader: ProfileLoaderService) {
    this.loadProfile = loader.middleware();
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    await this.loadProfile(context.switchToHttp().getRequest<FastifyRequest>());
    return true;
  }
}

/** Chain step 4 (D21): mutating a system-maintained entity needs admin:system. */
@Injectable()
export class MaintainedByGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const action = this.reflector.get<EntityAction | undefined>(ENTITY_ACTION, context.getHandler());
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    if (!action || !request.entity || !request.user) throw new AuthorizationError('Entity access denied');
    const decision = maintainedByAllows(action, request.entity, request.user);
    if (!decision.allowed) throw new AuthorizationError(decision.reason);
    return true;
  }
}

/** Chain step 5 (D22): the one access decision (canPerform) for the route's action. */
@Injectable()
export class EntityAccessGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const action = this.reflector.get<EntityAction | undefined>(ENTITY_ACTION, context.getHandler());
    const { entity, profile, user } = context.switchToHttp().getRequest<FastifyRequest>();
    if (!action || !entity || !profile || !user) throw new AuthorizationError('Entity access denied');
    const decision = canPerform(action, entity, profile.policy, user);
    if (!decision.allowed) throw new AuthorizationError(decision.reason);
    return true;
  }
}

/** Spec §4.3's chain after the token, in its order; every entity route uses exactly this. */
export const ENTITY_CHAIN = [EntityInfoGuard, ProfileLoaderGuard, MaintainedByGuard, EntityAccessGuard];
