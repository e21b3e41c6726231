import { Readable } from 'node:stream';
import { neutralized } from '../export/export-model';
import { pipeline } from 'node:stream/promises';
import { inline, workbook, zipOf } from '../../../test/support/xlsx-bombs';
import { DEFAULT_FILE_BOUNDS, FileCheck, fileRows, type ImportFormat, unprefixed } from './import-file';

/** Every row of a file, or the error that stopped it. */
async function read(format: ImportFormat, bytes: Buffer, bounds = DEFAULT_FILE_BOUNDS): Promise<unknown> {
  const rows = [];
  try {
    for await (const r of fileRows(format, Readable.from([bytes]), bounds)) rows.push(r);
    return rows;
  } catch (err) {
    return err;
  }
}

/** The bytes that pass the check, chunk by chunk as a stream brings them. */
async function checked(format: ImportFormat, chunks: Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [];
  await pipeline(Readable.from(chunks), new FileCheck(format), async (source: AsyncIterable<Buffer>) => {
    for await (const c of source) out.push(c);
  });
  return Buffer.concat(out);
}

describe('import files (D53)', () => {
  it('should undo exactly what the export prefixed (D48)', () => {
    for (const text of ['=SUM(A1)', '+1', '-x', '@a', 'a\n=b', '\tx', 'plain', "'quoted", "it's"])
      expect(unprefixed(neutralized(text))).toBe(text);
    expect(unprefixed("'plain")).toBe("'plain");
  });

  it('should read CSV rows as they come, dropping a BOM, and fail a ragged one as a 400', async () => {
    const rows = [];
    for await (const r of fileRows(
      'csv',
      Readable.from([Buffer.from('\uFEFFa,b\r\n1,"x,y"\r\n\r\n2,3\r\n')]),
    ))
      rows.push(r);
    expect(rows).toEqual([
      { row: 1, cells: ['a', 'b'] },
      { row: 2, cells: ['1', 'x,y'] },
      { row: 3, cells: ['2', '3'] },
    ]);
    const ragged = async () => {
      for await (const _ of fileRows('csv', Readable.from([Buffer.from('a,b\n1\n')]))) void _;
    };
    await expect(ragged()).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  it('should refuse an empty file, a CSV that is not UTF-8 and an XLSX that is not a zip', async () => {
    await expect(checked('csv', [])).rejects.toThrow('empty');
    await expect(checked('csv', [Buffer.from([0x61, 0xe9, 0x0a])])).rejects.toThrow('UTF-8');
    await expect(checked('csv', [Buffer.from([0x61, 0xc3])])).rejects.toThrow('UTF-8');
    await expect(checked('xlsx', [Buffer.from('ab')])).rejects.toThrow('XLSX');
    await expect(checked('xlsx', [Buffer.from('P'), Buffer.from('Kxx')])).rejects.toThrow('XLSX');
    // A character split across chunks is UTF-8 all the same; the bytes pass unchanged.
    const e = Buffer.from('a,\u00e9\n');
    expect(await checked('csv', [e.subarray(0, 3), e.subarray(3)])).toEqual(e);
    const zip = Buffer.from([0x50, 0x4b, 0x03, 0x04, 1, 2]);
    expect(await checked('xlsx', [zip.subarray(0, 2), zip.subarray(2)])).toEqual(zip);
  });

  describe('bounds of the text of a file (issue 34 #1)', () => {
    const small = { ...DEFAULT_FILE_BOUNDS, maxCellChars: 10, maxRowChars: 25 };

    it('should fail a CSV cell or record beyond its bound with a 400 naming file and the bound', async () => {
      expect(await read('csv', Buffer.from('a,b\n0123456789,x\n'), small)).toHaveLength(2);
      expect(await read('csv', Buffer.from('a,b\n01234567890,x\n'), small)).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [
          { field: 'file', error: 'row 2 has a cell longer than 10 characters (IMPORT_MAX_CELL_CHARS)' },
        ],
      });
      // The parser itself stops at the record bound: a long quoted field is never held whole.
      expect(await read('csv', Buffer.from(`a\n"${'x'.repeat(10_000)}"\n`), small)).toMatchObject({
        details: [{ field: 'file', error: 'row 2 is longer than 25 characters (IMPORT_MAX_ROW_CHARS)' }],
      });
    });

    it('should fail an XLSX cell or row beyond its bound, and a file beyond a bound of its XML', async () => {
      const sheet = (cells: string[]) =>
        zipOf(workbook([`<row r="1">${cells.map((c, i) => inline(`${'ABC'[i]}1`, c)).join('')}</row>`]));
      expect(await read('xlsx', await sheet(['0123456789']), small)).toEqual([
        { row: 1, cells: ['0123456789'] },
      ]);
      expect(await read('xlsx', await sheet(['01234567890']), small)).toMatchObject({
        details: [
          { field: 'file', error: 'row 1 has a cell longer than 10 characters (IMPORT_MAX_CELL_CHARS)' },
        ],
      });
      expect(
        await read('xlsx', await sheet(['0123456789', '0123456789', '0123456789']), small),
      ).toMatchObject({
        details: [{ field: 'file', error: 'row 1 is longer than 25 characters (IMPORT_MAX_ROW_CHARS)' }],
      });
      expect(await read('xlsx', await sheet(['x'.repeat(200)]), small)).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [
          { field: 'file', error: expect.stringMatching(/longer than 160 bytes .*IMPORT_MAX_CELL_CHARS/) },
        ],
      });
    });
  });
});
