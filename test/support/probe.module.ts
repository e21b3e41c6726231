import { Body, Controller, Get, Module, Post } from '@nestjs/common';
import { IsInt, IsNotEmpty, IsString, MaxLength, Min } from 'class-validator';
import { CurrentUser, NoTenant, RequirePermission } from '../../src/common/decorators/context.decorators';
import type { AuthUser } from '../../src/common/request-context';
import { Public } from '../../src/common/decorators/public.decorator';
import { DatabaseService } from '../../src/database/database.service';

class EchoDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(10)
  name!: string;

  @IsInt()
  @Min(0)
  count!: number;
}

/** Test-only routes that exercise the pipeline: a body, a database failure, an unexpected error. */
@Public()
@NoTenant()
@Controller('test')
class ProbeController {
  constructor(private readonly database: DatabaseService) {}

  @Post('echo')
  echo(@Body() body: EchoDto): EchoDto {
    return body;
  }

  @Get('db-error')
  async dbError(): Promise<unknown> {
    return this.database.dataSource.query('SELECT no_such_column FROM no_such_table_secret_name');
  }

  @Get('boom')
  boom(): never {
    throw new Error('internal detail that must not leak');
  }
}

/** Test-only protected routes: one needs a permission no VIEWER has, one any signed-in user. */
@Controller('test/protected')
class ProtectedProbeController {
  @Get('admin-cache')
  @RequirePermission('admin:cache')
  adminCache(@CurrentUser() user: AuthUser): { userId: number } {
    return { userId: user.userId };
  }

  @Get('read-entity')
  @RequirePermission('read:entity')
  readEntity(@CurrentUser() user: AuthUser): { userId: number } {
    return { userId: user.userId };
  }
}

@Module({ controllers: [ProbeController, ProtectedProbeController] })
export class ProbeModule {}
