import { Readable } from 'node:stream';
import { neutralized } from '../export/export-model';
import { pipeline } from 'node:stream/promises';
import { FileCheck, fileRows, type ImportFormat, unprefixed } from './import-file';

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
});
