import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  CurrentTenant,
  RequestId,
  RequireFeature,
  TenantOnly,
} from '../common/decorators/context.decorators';
import { Public } from '../common/decorators/public.decorator';
import { ApiEnvelope, ApiErrors } from '../common/http/api-docs';
import type { TenantContext } from '../common/request-context';
import { SigninResponseDto } from './auth.dto';
import { CreateAccountDto, SignupOtpDto, SignupOtpResponseDto } from './signup.dto';
import { SignupService } from './signup.service';

/** Self-service sign-up (spec §4.1, D15): public, tenant header only, tenant feature `signup` (D10). */
@ApiTags('auth')
@Controller('api/v1/auth')
export class SignupController {
  constructor(private readonly signup: SignupService) {}

  @Post('signup-otp')
  @HttpCode(200)
  @Public()
  @TenantOnly()
  @RequireFeature('signup')
  @ApiOperation({
    operationId: 'requestSignupCode',
    summary: 'Mail a 6-digit sign-up code and a one-time link (D15)',
    description:
      'Same answer whether or not the e-mail already has an account in the tenant (an existing ' +
      'account gets a notice mail without a code). At most one mail per tenant and e-mail per 60 s; ' +
      'sooner → 429 with Retry-After.',
  })
  @ApiEnvelope(SignupOtpResponseDto)
  @ApiErrors('VALIDATION_ERROR', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND', 'RATE_LIMITED')
  requestCode(
    @CurrentTenant() tenant: TenantContext,
    @Body() body: SignupOtpDto,
  ): Promise<SignupOtpResponseDto> {
    return this.signup.requestCode(tenant, body);
  }

  @Post('create-account')
  @HttpCode(200)
  @Public()
  @TenantOnly()
  @RequireFeature('signup')
  @ApiOperation({
    operationId: 'createAccount',
    summary: 'Create the account with the mailed code or link; returns a Bearer JWT (spec §2.13, D15)',
    description:
      'Body `{email_id, otp, password}` or `{password, session}`. A code lives 10 minutes, allows 5 ' +
      'attempts and works once; a code or link of another tenant is refused (400).',
  })
  @ApiEnvelope(SigninResponseDto)
  @ApiErrors('VALIDATION_ERROR', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND', 'CONFLICT')
  createAccount(
    @CurrentTenant() tenant: TenantContext,
    @Body() body: CreateAccountDto,
    @RequestId() requestId: string,
  ): Promise<SigninResponseDto> {
    return this.signup.createAccount(tenant, body, requestId);
  }
}
