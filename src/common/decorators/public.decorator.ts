import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'mtb:isPublic';
export const RAW_RESPONSE = 'mtb:rawResponse';

/** Marks a route as reachable without a token (default-deny: everything else is protected). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);

/** The handler writes its own body (probes, metrics): no success envelope around it. */
export const RawResponse = (): MethodDecorator & ClassDecorator => SetMetadata(RAW_RESPONSE, true);
