import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsNotEmpty, IsOptional, IsString, MaxLength } from 'class-validator';
import { IsEmailAddress } from '../common/validation/text.decorators';
import { NormalisedEmail } from './signup.dto';

export class SigninDto {
  @ApiProperty({ example: 'admin@acme.test' })
  // Checked bottom-up with stopAtFirstError: a missing field is reported as 'required' only. The
  // address is checked as sign-in compares it (trimmed, lower case): an address no account can
  // have answers 400, as on sign-up (issue 21 #5, #7).
  @NormalisedEmail()
  @IsEmailAddress()
  @MaxLength(254)
  @IsString({ message: 'must be a string' })
  @IsNotEmpty({ message: 'required' })
  email_id!: string;

  @ApiProperty({ example: 'Demo-Passw0rd!' })
  @MaxLength(1024)
  @IsString({ message: 'must be a string' })
  @IsNotEmpty({ message: 'required' })
  password!: string;

  @ApiPropertyOptional({ description: 'Accepted and ignored (spec §4.1)' })
  @IsOptional()
  @IsString()
  @MaxLength(4096)
  device_token?: string;
}

export class TenantConfigDto {
  @ApiProperty() tenant_id!: string;
  @ApiProperty() tenant_code!: string;
  @ApiProperty() tenant_name!: string;
  @ApiProperty({ nullable: true, type: String }) logo_url!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) colors!: Record<string, string>;
  @ApiProperty({ type: 'object', additionalProperties: true }) settings!: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Application settings' })
  app!: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'UI configuration' })
  ui!: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'boolean' } }) features!: Record<
    string,
    boolean
  >;
}

export class SigninResponseDto {
  @ApiProperty({ description: 'HS256 JWT' }) token!: string;
  @ApiProperty() user_id!: number;
  @ApiProperty({ description: 'Decrypted tenant id' }) tenant_id!: string;
  @ApiProperty({ description: 'Token lifetime in seconds' }) expires_in!: number;
  @ApiProperty() expires_at!: string;
  @ApiProperty({ example: 'Bearer' }) type!: string;
  @ApiProperty({ type: TenantConfigDto, nullable: true }) tenantSettings!: TenantConfigDto | null;
  @ApiProperty() message!: string;
}

export class MessageDto {
  @ApiProperty() message!: string;
}

export class ProfileDto {
  @ApiProperty() user_id!: number;
  @ApiProperty() email_id!: string;
  @ApiProperty({ nullable: true, type: Number }) role_id!: number | null;
  @ApiProperty({ nullable: true, type: String }) role_code!: string | null;
  @ApiProperty({ nullable: true, type: String }) first_name!: string | null;
  @ApiProperty({ nullable: true, type: String }) last_name!: string | null;
  @ApiProperty() tenant_id!: string;
  @ApiProperty() tenant_code!: string;
  @ApiProperty() tenant_name!: string;
  @ApiProperty({ type: [String] }) roles!: string[];
  @ApiProperty({ type: [String] }) permissions!: string[];
}
