import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsNotEmpty,
  IsString,
  Matches,
  MaxLength,
  MinLength,
  ValidateBy,
  ValidateIf,
  ValidationArguments,
} from 'class-validator';
import { IsEmailAddress, IsWellFormedText } from '../common/validation/text.decorators';
import { normaliseEmail } from './users.repository';

/** The e-mail as sign-in compares it: trimmed and lower-cased before it is validated. */
export const NormalisedEmail = (): PropertyDecorator =>
  Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? normaliseEmail(value) : value));

/** `session` excludes `email_id` and `otp`: a request uses one form of create-account, never both. */
const OnlyForm = (): PropertyDecorator =>
  ValidateBy({
    name: 'onlyForm',
    validator: {
      validate: (_: unknown, args?: ValidationArguments) => {
        const body = args?.object as Partial<CreateAccountDto> | undefined;
        return body?.email_id === undefined && body?.otp === undefined;
      },
      defaultMessage: () => 'send either session or email_id with otp, not both',
    },
  });

// class-validator checks a property's decorators bottom-up and stops at the first failure
// (stopAtFirstError): a missing field is reported as 'required' only.
export class SignupOtpDto {
  @ApiProperty({ example: 'new.user@example.com', maxLength: 100 })
  @NormalisedEmail()
  @IsEmailAddress()
  @MaxLength(100, { message: 'must be at most 100 characters' })
  @IsString({ message: 'must be a string' })
  @IsNotEmpty({ message: 'required' })
  email_id!: string;
}

export class SignupOtpResponseDto {
  @ApiProperty({ example: 'If this e-mail can be registered, a code has been sent to it' })
  message!: string;
  @ApiProperty({ example: 'new.user@example.com', description: 'The normalised e-mail' })
  email_id!: string;
}

/**
 * Variant 1: `{email_id, otp, password}` (the code from the mail). Variant 2: `{password, session}`
 * (the one-time token of the mail's link). Exactly one of the two (D15).
 */
export class CreateAccountDto {
  @ApiPropertyOptional({ example: 'new.user@example.com', description: 'With otp; not with session' })
  @ValidateIf((o: CreateAccountDto) => o.session === undefined || o.email_id !== undefined)
  @NormalisedEmail()
  @IsEmailAddress()
  @MaxLength(100, { message: 'must be at most 100 characters' })
  @IsString({ message: 'must be a string' })
  @IsNotEmpty({ message: 'required' })
  email_id?: string;

  @ApiPropertyOptional({ example: '042917', description: 'The 6-digit code of the mail; with email_id' })
  @ValidateIf((o: CreateAccountDto) => o.session === undefined || o.otp !== undefined)
  @Matches(/^\d{6}$/, { message: 'must be 6 digits' })
  @IsString({ message: 'must be a string' })
  @IsNotEmpty({ message: 'required' })
  otp?: string;

  @ApiPropertyOptional({
    description:
      "The one-time token of the mail's link (`session=` parameter); alone, without email_id and otp",
  })
  @ValidateIf((o: CreateAccountDto) => o.session !== undefined)
  @OnlyForm()
  @Matches(/^[A-Za-z0-9_-]{43}$/, { message: 'invalid' })
  @IsString({ message: 'must be a string' })
  @IsNotEmpty({ message: 'required' })
  session?: string;

  @ApiProperty({ minLength: 8, maxLength: 1024, example: 'a-long-Passw0rd' })
  // A lone surrogate would be hashed as U+FFFD: two different passwords would be one.
  @IsWellFormedText()
  @MaxLength(1024, { message: 'must be at most 1024 characters' })
  @MinLength(8, { message: 'must be at least 8 characters' })
  @IsString({ message: 'must be a string' })
  @IsNotEmpty({ message: 'required' })
  password!: string;
}
