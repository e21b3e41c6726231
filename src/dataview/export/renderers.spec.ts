import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { PassThrough } from 'node:stream';
import { CsvRenderer } from './csv.renderer';
import { ExportColumn, exportFilename, ExportInput, neutralized, typedCell } from './export-model';
import { PdfRenderer } from './pdf.renderer';
import { XlsxRenderer } from './xlsx.renderer';

const COLUMNS: ExportColumn[] = [
  { fieldCode: 'name', header: 'Name', widthPx: 140, kind: 'text' },
  { fieldCode: 'amount', header: 'Amount', widthPx: 70, kind: 'number' },
  { fieldCode: 'day', header: 'Day', widthPx: null, kind: 'date' },
  { fieldCode: 'ok', header: 'OK', widthPx: 35, kind: 'boolean' },
];

function input(
  rows: Array<Record<string, unknown>>,
  batch = 2,
  totals?: Record<string, unknown>,
): ExportInput {
  async function* batches() {
    for (let i = 0; i < rows.length; i += batch) yield rows.slice(i, i + batch);
  }
  return {
    columns: COLUMNS,
    batches: batches(),
    meta: {
      dataviewCode: 'things',
      dataviewName: 'Things',
      filters: [{ fieldCode: 'amount', operator: 'greater_than', value: 0 }],
      sort: [{ fieldCode: 'name', direction: 'asc' }],
      search: null,
      exportedBy: 'someone@example.test',
      exportedAt: new Date('2026-01-05T10:00:00Z'),
    },
    written: { rows: 0 },
    ...(totals ? { aggregates: () => Promise.resolve(totals) } : {}),
  };
}

async function rendered(renderer: { render(i: ExportInput, o: PassThrough): Promise<void> }, i: ExportInput) {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  await renderer.render(i, out);
  return Buffer.concat(chunks);
}

const ROWS = [
  { name: '=SUM(A1)', amount: -5, day: '2026-01-02', ok: true },
  { name: '+1', amount: 2.5, day: null, ok: false },
  { name: '@x', amount: null, day: '2026-01-03', ok: null },
  { name: 'plain, "quoted"', amount: 3, day: '2026-01-04', ok: true },
  { name: '\tTab', amount: 0, day: null, ok: true },
];

describe('export cells (D48)', () => {
  it('should prefix text that starts a formula and never touch numbers', () => {
    expect(['=a', '+a', '-a', '@a', '\ta', '\ra', 'a=', ''].map(neutralized)).toEqual([
      "'=a",
      "'+a",
      "'-a",
      "'@a",
      "'\ta",
      "'\ra",
      'a=',
      '',
    ]);
    expect(typedCell(COLUMNS[1], -5)).toBe(-5);
    expect(typedCell(COLUMNS[1], '-12.50')).toBe(-12.5);
    expect(typedCell(COLUMNS[1], '****')).toBe('****');
    expect(typedCell(COLUMNS[0], '-5')).toBe("'-5");
    expect(typedCell(COLUMNS[2], '2026-01-02')).toEqual(new Date('2026-01-02T00:00:00Z'));
    expect(typedCell(COLUMNS[3], false)).toBe(false);
  });

  it('should prefix a formula after leading blanks, in full-width and small forms, and after `;`', () => {
    const cases: Array<[string, string]> = [
      [' =1+1', "' =1+1"],
      ['\u00a0\u3000+1', "'\u00a0\u3000+1"],
      ['\u200b@x', "'\u200b@x"],
      ['\n=1+1', "'\n'=1+1"],
      ['\r\n=1', "'\r\n'=1"],
      ['\nplain', "'\nplain"],
      [';=1+1', "';=1+1"],
      ['＝1+1', "'＝1+1"],
      ['＋1', "'＋1"],
      ['－1', "'－1"],
      ['＠SUM(1)', "'＠SUM(1)"],
      ['﹦1', "'﹦1"],
      ['；=1', "'；=1"],
      ['a;b', 'a;b'],
      ['x=1', 'x=1'],
      ['  plain', '  plain'],
      ['1-2', '1-2'],
    ];
    expect(cases.map(([text]) => neutralized(text))).toEqual(cases.map(([, out]) => out));
  });

  it('should neutralize every line of a multi-line cell, whatever its line break', () => {
    expect(neutralized('Frank\n=1+1')).toBe("Frank\n'=1+1");
    expect(neutralized('Carol\r@SUM(1+1)')).toBe("Carol\r'@SUM(1+1)");
    expect(neutralized('a\r\n -1\n\tb\nok')).toBe("a\r\n' -1\n'\tb\nok");
    expect(neutralized('=a\n+b')).toBe("'=a\n'+b");
    expect(neutralized('first\nsecond')).toBe('first\nsecond');
    expect(neutralized('end\n')).toBe('end\n');
  });

  it('should name files from the template with the date and the extension', () => {
    const at = new Date('2026-03-04T23:00:00Z');
    expect(exportFilename('customers_{date}', 'c', at, 'csv')).toBe('customers_2026-03-04.csv');
    expect(exportFilename(undefined, 'c', at, 'pdf')).toBe('c_2026-03-04.pdf');
    expect(exportFilename('../a b/{date}"', 'c', at, 'xlsx')).toBe('a_b_2026-03-04_.xlsx');
  });
});

describe('CsvRenderer', () => {
  it('should write the header and every batch, quoted, formulas prefixed', async () => {
    const i = input(ROWS);
    const text = (await rendered(new CsvRenderer(), i)).toString('utf8');
    expect(text.split('\r\n')).toEqual([
      'Name,Amount,Day,OK',
      "'=SUM(A1),-5,2026-01-02,true",
      "'+1,2.5,,false",
      "'@x,,2026-01-03,",
      '"plain, ""quoted""",3,2026-01-04,true',
      "'\tTab,0,,true",
      '',
    ]);
    expect(i.written.rows).toBe(5);
  });
});

describe('CsvRenderer against row and formula injection (issue 21 #2)', () => {
  const HOSTILE = [
    { name: 'Frank\n=1+1', amount: 1, day: null, ok: true },
    { name: 'Carol\r@SUM(1+1)', amount: 2, day: null, ok: true },
    { name: '\n=HYPERLINK("x")', amount: 3, day: null, ok: true },
    { name: ' =1+1', amount: 4, day: null, ok: true },
    { name: ';=1+1', amount: 5, day: null, ok: true },
    { name: '＝1+1', amount: 6, day: null, ok: true },
    { name: 'Dave;=1+1', amount: 7, day: null, ok: true },
    { name: 'Eve\r\n-2', amount: -8, day: null, ok: false },
  ];

  it('should quote every field with a CR, LF or `;`, so a strict parser reads exactly one row per record', async () => {
    const i = input(HOSTILE, 3);
    const bytes = await rendered(new CsvRenderer(), i);
    const rows: string[][] = parse(bytes, { bom: false, relax_quotes: false, relax_column_count: false });
    expect(rows).toHaveLength(HOSTILE.length + 1);
    expect(rows.map((r) => r.length)).toEqual(rows.map(() => COLUMNS.length));
    expect(rows.slice(1).map((r) => r[0])).toEqual([
      "Frank\n'=1+1",
      "Carol\r'@SUM(1+1)",
      '\'\n\'=HYPERLINK("x")',
      "' =1+1",
      "';=1+1",
      "'＝1+1",
      'Dave;=1+1',
      "Eve\r\n'-2",
    ]);
    expect(rows.slice(1).map((r) => r[1])).toEqual(['1', '2', '3', '4', '5', '6', '7', '-8']);
    const text = bytes.toString('utf8');
    expect(text).toContain('"Frank\n\'=1+1"');
    expect(text).toContain('"Carol\r\'@SUM(1+1)"');
    expect(text).toContain('"Dave;=1+1"');
    expect(i.written.rows).toBe(HOSTILE.length);
  });

  it('should leave no line of the file starting a formula, even split on every CR and LF', async () => {
    const text = (await rendered(new CsvRenderer(), input(HOSTILE))).toString('utf8');
    for (const line of text.split(/\r\n|\r|\n/)) {
      const cell = line.startsWith('"') ? line.slice(1) : line;
      expect(cell).not.toMatch(/^[\s]*[=+\-@;＝＋－＠]/);
    }
  });
});

describe('XlsxRenderer', () => {
  it('should write typed cells, a frozen header with a filter, widths, the footer and About', async () => {
    const bytes = await rendered(new XlsxRenderer(), input(ROWS, 2, { amount: 0.5 }));
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.load(bytes as any);
    const sheet = wb.getWorksheet('Data')!;
    expect(sheet.getRow(1).values).toEqual([undefined, 'Name', 'Amount', 'Day', 'OK']);
    expect(sheet.getRow(2).values).toEqual([
      undefined,
      "'=SUM(A1)",
      -5,
      new Date('2026-01-02T00:00:00Z'),
      true,
    ]);
    expect(sheet.getRow(7).getCell(2).value).toBe(0.5);
    expect(sheet.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 });
    expect(sheet.autoFilter).toBeDefined();
    expect(sheet.getColumn(1).width).toBe(20);
    const about = wb.getWorksheet('About')!;
    expect(about.getRow(6).values).toEqual([undefined, 'Rows', 5]);
    expect(about.getRow(7).values).toEqual([undefined, 'Exported by', 'someone@example.test']);
  });
});

describe('XlsxRenderer against formula injection (issue 21 #2)', () => {
  it('should neutralize text cells by the same rule as CSV, every line of them', async () => {
    const rows = [
      { name: 'Frank\n=1+1', amount: -1, day: null, ok: true },
      { name: ' =1+1', amount: 2, day: null, ok: true },
      { name: '＠SUM(1)', amount: 3, day: null, ok: true },
    ];
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.load((await rendered(new XlsxRenderer(), input(rows))) as any);
    const sheet = wb.getWorksheet('Data')!;
    expect([2, 3, 4].map((n) => sheet.getRow(n).getCell(1).value)).toEqual([
      "Frank\n'=1+1",
      "' =1+1",
      "'＠SUM(1)",
    ]);
    expect(sheet.getRow(2).getCell(2).value).toBe(-1);
  });
});

describe('PdfRenderer', () => {
  it('should write a PDF of several pages for many rows', async () => {
    const many = Array.from({ length: 200 }, (_, n) => ({
      name: `Row ${n}`,
      amount: n,
      day: null,
      ok: true,
    }));
    const i = input(many, 50, { amount: 19900 });
    const pdf = await rendered(new PdfRenderer(), i);
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    expect((pdf.toString('latin1').match(/\/Type \/Page\b/g) ?? []).length).toBeGreaterThan(4);
    expect(i.written.rows).toBe(200);
  });
});
