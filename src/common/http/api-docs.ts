import { applyDecorators } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiOkResponse,
  ApiProperty,
  ApiPropertyOptional,
  ApiResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import { ERROR_STATUS, ErrorCode } from '../errors/error-codes';

/** Names of the OpenAPI security schemes declared in bootstrap.ts. */
export const TENANT_HEADER_SCHEME = 'tenant';
export const BEARER_SCHEME = 'bearer';

export class MetaDto {
  @ApiProperty({ example: '2026-11-21T12:00:00.000Z' }) timestamp!: string;
  @ApiProperty({ example: '3f6c1a52-9d1e-4b4f-8f0e-2b1c9c7c1a11' }) requestId!: string;
}

export class ErrorDetailDto {
  @ApiProperty({ enum: Object.keys(ERROR_STATUS) }) code!: string;
  @ApiProperty() message!: string;
  @ApiPropertyOptional({
    description: 'Field errors, flags or other specifics; null when none',
    nullable: true,
  })
  details!: unknown;
}

/** The error envelope of D17. */
export class ErrorEnvelopeDto {
  @ApiProperty({ example: false }) success!: boolean;
  @ApiProperty({ description: 'Same as error.message (spec §7 simple body)' }) message!: string;
  @ApiProperty({ type: ErrorDetailDto }) error!: ErrorDetailDto;
  @ApiProperty({ type: MetaDto }) meta!: MetaDto;
}

const DESCRIPTIONS: Partial<Record<ErrorCode, string>> = {
  VALIDATION_ERROR: 'Bad input (details list the fields)',
  UNAUTHORIZED: 'Token missing, invalid, expired or revoked',
  FORBIDDEN: 'Authenticated but not allowed',
  NOT_FOUND: 'Not found',
  CONFLICT: 'Conflict',
  PAYLOAD_TOO_LARGE: 'Body larger than BODY_LIMIT_BYTES',
  RATE_LIMITED: 'Too many requests (Retry-After)',
  SERVICE_ERROR: 'Unexpected error (logged; never a raw database error)',
  NOT_READY: 'Service still starting (readiness gate)',
  OVERLOADED: 'Shedding load under event-loop pressure (Retry-After)',
};

/** Documents error answers with the envelope schema; NOT_READY, OVERLOADED and SERVICE_ERROR apply to every route. */
export function ApiErrors(...codes: ErrorCode[]): MethodDecorator & ClassDecorator {
  const all = [...new Set<ErrorCode>([...codes, 'SERVICE_ERROR', 'NOT_READY', 'OVERLOADED'])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of all)
    byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  return applyDecorators(
    ...[...byStatus.entries()].map(([status, group]) =>
      ApiResponse({
        status,
        type: ErrorEnvelopeDto,
        description: group.map((c) => `${c}: ${DESCRIPTIONS[c] ?? c}`).join('; '),
      }),
    ),
  );
}

/** Documents a success answer: the envelope of D16 around `model` as `data`. */
export function ApiEnvelope(model: new (...args: never[]) => unknown): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiExtraModels(model),
    ApiOkResponse({
      schema: {
        type: 'object',
        properties: {
          success: { type: 'boolean', example: true },
          data: { $ref: getSchemaPath(model) },
          meta: { $ref: getSchemaPath(MetaDto) },
        },
      },
    }),
    ApiExtraModels(MetaDto),
  );
}
