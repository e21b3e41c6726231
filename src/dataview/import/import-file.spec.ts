import { Readable } from 'node:stream';
import { neutralized } from '../export/export-model';
import { checkFile, fileRows, unprefixed } from './import-file';

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

  it('should refuse an empty file, a CSV that is not UTF-8 and an XLSX that is not a zip', () => {
    expect(() => checkFile('csv', Buffer.alloc(0))).toThrow('empty');
    expect(() => checkFile('csv', Buffer.from([0x61, 0xe9, 0x0a]))).toThrow('UTF-8');
    expect(() => checkFile('xlsx', Buffer.from('ab'))).toThrow('XLSX');
    expect(() => checkFile('csv', Buffer.from('a,b\n'))).not.toThrow();
  });
});
