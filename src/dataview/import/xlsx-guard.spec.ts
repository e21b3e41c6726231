import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import { Readable } from 'node:stream';
import { bombs, inline, type Piece, workbook, zipOf } from '../../../test/support/xlsx-bombs';
import { DEFAULT_FILE_BOUNDS } from './import-file';
import { scanXlsx, type XlsxBounds, XlsxBoundError } from './xlsx-guard';
import { XmlMeter } from './xml-meter';

const MB = 1024 * 1024;
const scan = (zip: Buffer, bounds: Partial<XlsxBounds> = {}) =>
  scanXlsx(Readable.from([zip]), { ...DEFAULT_FILE_BOUNDS, ...bounds });
/** The bound a scan broke, or 'passed'. */
const broken = (zip: Buffer, bounds: Partial<XlsxBounds> = {}) =>
  scan(zip, bounds).then(
    () => 'passed',
    (err: unknown) => (err instanceof XlsxBoundError ? err.message : `not a bound: ${String(err)}`),
  );

describe('XLSX scan before exceljs reads a workbook (issue 34 #1)', () => {
  it('should count what the zip inflates to, entry by entry, as JSZip reads it', async () => {
    const wb = new ExcelJS.Workbook();
    const sheet = wb.addWorksheet('Data');
    sheet.addRow(['name', 'email']);
    for (let i = 0; i < 2000; i++) sheet.addRow([`Name ${i}`, `n${i}@acme.example`]);
    const zip = Buffer.from(await wb.xlsx.writeBuffer());
    const result = await scan(zip);
    const jszip = await JSZip.loadAsync(zip);
    const expected = await Promise.all(
      Object.values(jszip.files)
        .filter((f) => !f.dir)
        .map(async (f) => ({ path: f.name, inflated: (await f.async('nodebuffer')).length })),
    );
    expect(
      result.entries.filter((e) => !e.path.endsWith('/')).sort((a, b) => a.path.localeCompare(b.path)),
    ).toEqual(expected.sort((a, b) => a.path.localeCompare(b.path)));
    expect(result.inflated).toBe(expected.reduce((n, e) => n + e.inflated, 0));
    expect(result.sharedStrings).toBe(4002);
  });

  it('should stop a 200 MB inline string and a 200 MB shared string at the cell bound', async () => {
    expect(await broken(await bombs.inlineString())).toMatch(
      /sheet1\.xml has an XML tag or text longer than 524272 bytes \(IMPORT_MAX_CELL_CHARS\)/,
    );
    expect(await broken(await bombs.sharedString())).toMatch(
      /sharedStrings\.xml has .* longer than 524272 bytes .*IMPORT_MAX_CELL_CHARS/,
    );
  });

  it('should stop an entry that inflates beyond the ratio, and let a small repetitive one pass', async () => {
    expect(await broken(await bombs.ratio())).toMatch(
      /image1\.png inflates more than 100 times .*IMPORT_MAX_ZIP_RATIO/,
    );
    const small = await zipOf(
      workbook([`<row r="1">${inline('A1', 'name')}</row>`], undefined, [
        ['xl/media/a.bin', [{ repeat: '\0', times: MB - 1 }]],
      ]),
    );
    expect(await broken(small)).toBe('passed');
  });

  it('should refuse a DTD: an external entity (XXE) and entity expansion', async () => {
    expect(await broken(await bombs.xxe())).toMatch(/a DTD declaration/);
    expect(await broken(await bombs.billionLaughs())).toMatch(/a DTD declaration/);
  });

  it('should bound the inflated total, the shared strings and the parts held whole', async () => {
    const rows = (n: number): Piece[] => [
      { repeat: `<row><c t="inlineStr"><is><t>x</t></is></c></row>`, times: n },
    ];
    expect(await broken(await zipOf(workbook(rows(100_000))), { maxInflatedBytes: MB })).toMatch(
      /inflates to more than 1048576 bytes \(IMPORT_MAX_INFLATED_BYTES\)/,
    );
    const strings = (n: number): Piece[] => [{ repeat: '<si><t>abc</t></si>', times: n }];
    expect(await broken(await zipOf(workbook([], strings(1001))), { maxSharedStrings: 1000 })).toMatch(
      /more than 1000 shared strings \(IMPORT_MAX_SHARED_STRINGS\)/,
    );
    expect(await broken(await zipOf(workbook([], strings(1000))), { maxSharedStrings: 1000 })).toBe('passed');
    expect(
      await broken(await zipOf(workbook([], strings(100_000))), {
        maxSharedStringsBytes: MB,
        maxRatio: 10_000,
      }),
    ).toMatch(/sharedStrings\.xml inflates to more than 1048576 bytes \(IMPORT_MAX_SHARED_STRINGS_BYTES\)/);
  });

  it('should bound a row and a cell however its text is split (comments, CDATA, rich-text runs)', async () => {
    const bounds = { maxCellChars: 100, maxRowChars: 1000 };
    const cell = (inner: Piece[]): Piece[] => [
      '<row r="1"><c r="A1" t="inlineStr"><is>',
      ...inner,
      '</is></c></row>',
    ];
    expect(await broken(await zipOf(workbook(cell(['<t>', 'a'.repeat(1550), '</t>']))), bounds)).toBe(
      'passed',
    );
    for (const [label, inner] of [
      ['text', ['<t>', { repeat: 'a', times: 1601 }, '</t>']],
      ['comments', ['<t>', { repeat: 'aaaa<!-- <b> -->', times: 200 }, '</t>']],
      ['CDATA', ['<t>', { repeat: '<![CDATA[a<b>]]>', times: 200 }, '</t>']],
      ['rich-text runs', [{ repeat: '<r><t>aaaaaaaaaa</t></r>', times: 200 }]],
    ] as Array<[string, Piece[]]>)
      expect([label, await broken(await zipOf(workbook(cell(inner))), bounds)]).toEqual([
        label,
        expect.stringMatching(/longer than 1600 bytes/),
      ]);
    const row = ['<row r="1">', { repeat: '<c r="A1"><v>123456</v></c>', times: 1000 }, '</row>'];
    expect(await broken(await zipOf(workbook(row)), bounds)).toMatch(
      /a row longer than 16000 bytes of XML \(IMPORT_MAX_ROW_CHARS\)/,
    );
  });

  it('should measure the same whatever the chunks (one byte at a time or whole)', () => {
    const xml = Buffer.from(
      `<?xml version="1.0"?><sst><si><t>ab<!-- x -> -- > --></t></si><si><![CDATA[ ]] > ]]><t>cd</t></si><!-- end --></sst>`,
    );
    const whole = new XmlMeter({ maxRunBytes: 1e6, maxRowBytes: 1e6 });
    whole.write(xml);
    const bytes = new XmlMeter({ maxRunBytes: 1e6, maxRowBytes: 1e6 });
    for (const b of xml) bytes.write(Buffer.from([b]));
    expect([whole.sharedStrings, bytes.sharedStrings]).toEqual([2, 2]);
    // The comment's `<b>`-like text and a `-->`-less `->` do not end it: the run keeps counting.
    const run = new XmlMeter({ maxRunBytes: 40, maxRowBytes: 1e6 });
    expect(() => run.write(Buffer.from('<t><!-- <a> <b> -> --  > still inside --></t>'))).toThrow(
      /longer than 40 bytes/,
    );
  });

  it('should fail a zip that is not one, or cut short, as an error of its own (not a bound)', async () => {
    const zip = await zipOf(workbook([customer()]));
    await expect(scan(zip.subarray(0, zip.length - 200))).rejects.not.toBeInstanceOf(XlsxBoundError);
    await expect(scan(Buffer.from('PK\x03\x04 not really a zip at all'))).rejects.not.toBeInstanceOf(
      XlsxBoundError,
    );
  });
});

function customer(): string {
  return `<row r="1">${inline('A1', 'name')}</row><row r="2">${inline('A2', 'x')}</row>`;
}
