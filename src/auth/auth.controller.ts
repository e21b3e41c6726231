import { SerializedJson } from '../common/serialized-json';
import { Body, Controller, Get, HttpCode, Ip, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  Authenticated,
  CurrentTenant,
  CurrentUser,
  TenantOnly,
} from '../common/decorators/context.decorators';
import { Public } from '../common/decorators/public.decorator';
import { ApiEnvelope, ApiErrors } from '../common/http/api-docs';
import type { AuthUser, TenantContext } from '../common/request-context';
import { MessageDto, ProfileDto, SigninDto, SigninResponseDto, TenantConfigDto } from './auth.dto';
import { AuthService } from './auth.service';

/** Spec §4.1. Public routes need the tenant header only; the others a token too. */
@ApiTags('auth')
@Controller('api/v1/auth')
export class AuthController {
  constructor(private readonly auth: AuthService) {}

  @Get('tenant-config')
  @Public()
  @TenantOnly()
  @ApiOperation({
    operationId: 'getTenantConfig',
    summary: "Login screen configuration of the header's tenant (spec §2.12, D11)",
  })
  @ApiEnvelope(TenantConfigDto)
  @ApiErrors('VALIDATION_ERROR', 'FORBIDDEN', 'NOT_FOUND')
  tenantConfig(@CurrentTenant() tenant: TenantContext): Promise<SerializedJson> {
    // TenantConfigDto's shape, as JSON text serialized once per cached tenant row.
    return this.auth.tenantConfigJson(tenant);
  }

  @Post('signin')
  @HttpCode(200)
  @Public()
  @TenantOnly()
  @ApiOperation({
    operationId: 'signIn',
    summary: 'Sign in with e-mail and password; returns a Bearer JWT (spec §2.13, D12-D13)',
  })
  @ApiEnvelope(SigninResponseDto)
  @ApiErrors('VALIDATION_ERROR', 'INVALID_CREDENTIALS', 'FORBIDDEN', 'NOT_FOUND', 'RATE_LIMITED')
  signin(
    @CurrentTenant() tenant: TenantContext,
    @Body() body: SigninDto,
    // request.ip: the peer, or X-Forwarded-For from the proxies TRUST_PROXY names (D46 throttle).
    @Ip() clientAddress: string,
  ): Promise<SigninResponseDto> {
    return this.auth.signin(tenant, body, clientAddress);
  }

  @Post('logout')
  @HttpCode(200)
  @Authenticated()
  @ApiOperation({ operationId: 'signOut', summary: 'Revoke the current token (D14)' })
  @ApiEnvelope(MessageDto)
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN')
  logout(@CurrentUser() user: AuthUser): Promise<MessageDto> {
    return this.auth.logout(user);
  }

  @Get('profile')
  @Authenticated()
  @ApiOperation({ operationId: 'getProfile', summary: 'The signed-in user' })
  @ApiEnvelope(ProfileDto)
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND')
  profile(@CurrentTenant() tenant: TenantContext, @CurrentUser() user: AuthUser): Promise<ProfileDto> {
    return this.auth.profile(tenant, user);
  }
}
