import { ApiProperty } from '@nestjs/swagger';

export class KeyCountDto {
  @ApiProperty({ example: '5d1b9a0c', description: 'Key id: the first 8 hex of the SHA-256 of the key' })
  kid!: string;
  @ApiProperty({ example: true, description: 'The current key (encrypts); else a previous one (read only)' })
  current!: boolean;
  @ApiProperty({ example: 12 }) count!: number;
}

export class StoredSecretStatusDto {
  @ApiProperty({
    example: 'connections',
    description: 'connections (external connection strings) or webhookSecrets',
  })
  kind!: string;
  @ApiProperty({ example: 'app_connections.con_connection_string' }) column!: string;
  @ApiProperty({ example: 13, description: 'Rows of every tenant' }) total!: number;
  @ApiProperty({ example: 0 }) empty!: number;
  @ApiProperty({
    type: KeyCountDto,
    isArray: true,
    description: 'Values per accepted key, the current key first (0 when none is under it)',
  })
  keys!: KeyCountDto[];
  @ApiProperty({ example: 1, description: 'enc:v1 values (no key id) that an accepted key reads' })
  legacy!: number;
  @ApiProperty({ example: 0, description: 'Values no accepted key reads' })
  unreadable!: number;
  @ApiProperty({
    example: 1,
    description: 'What npm run keys:rotate would re-encrypt: values under a previous key, and legacy ones',
  })
  toRotate!: number;
}

export class KeyStatusDto {
  @ApiProperty({ example: '5d1b9a0c', description: 'The current CONNECTION_ENCRYPTION_KEY id' })
  currentKid!: string;
  @ApiProperty({
    example: ['9a0c44e1'],
    type: [String],
    description: 'Ids of CONNECTION_ENCRYPTION_KEY_PREVIOUS',
  })
  previousKids!: string[];
  @ApiProperty({ type: StoredSecretStatusDto, isArray: true }) storedSecrets!: StoredSecretStatusDto[];
}
