import { Body, Controller, Get, Module, Post } from '@nestjs/common';
import { IsInt, IsNotEmpty, IsString, MaxLength, Min } from 'class-validator';
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

@Module({ controllers: [ProbeController] })
export class ProbeModule {}
