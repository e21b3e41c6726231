import archiver from 'archiver';
import { Readable } from 'node:stream';

/**
 * Real zip files for the import bounds (issue 34 #1), written by archiver (zlib deflate, the entries
 * streamed, sizes in a data descriptor as any streaming zip writer leaves them): a minimal workbook
 * whose parts are given as text, or as repeated text produced on the fly (a 200 MB part is never
 * held in memory, here or in the service).
 */

/** Text, or `times` times `repeat`, one after another. */
export type Piece = string | { repeat: string; times: number };

/** A readable of the pieces, 64 KiB at a time. */
export function streamOf(pieces: Piece[]): Readable {
  return Readable.from(
    (function* () {
      for (const piece of pieces) {
        if (typeof piece === 'string') {
          yield Buffer.from(piece);
          continue;
        }
        const per = Math.max(1, Math.floor(65536 / Buffer.byteLength(piece.repeat)));
        const block = Buffer.from(piece.repeat.repeat(per));
        let left = piece.times;
        for (; left >= per; left -= per) yield block;
        if (left > 0) yield Buffer.from(piece.repeat.repeat(left));
      }
    })(),
  );
}

export type ZipEntry = [name: string, content: Piece[] | Buffer];

/** The zip of the entries, in that order. */
export async function zipOf(entries: ZipEntry[]): Promise<Buffer> {
  const archive = archiver('zip', { zlib: { level: 6 } });
  const chunks: Buffer[] = [];
  archive.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve, reject) => {
    archive.on('end', resolve);
    archive.on('error', reject);
  });
  for (const [name, content] of entries)
    archive.append(Buffer.isBuffer(content) ? content : streamOf(content), { name });
  await archive.finalize();
  await done;
  return Buffer.concat(chunks);
}

const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const RELS = 'http://schemas.openxmlformats.org/package/2006/relationships';
const DOC = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

/** The parts of a one-sheet workbook around `sheetData` (and shared strings when given). */
export function workbook(sheetData: Piece[], sharedStrings?: Piece[], extra: ZipEntry[] = []): ZipEntry[] {
  const types =
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
    `<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
    `<Default Extension="xml" ContentType="application/xml"/>` +
    `<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
    `<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`;
  return [
    ['[Content_Types].xml', [types]],
    [
      '_rels/.rels',
      [
        `<Relationships xmlns="${RELS}"><Relationship Id="rId1" Type="${DOC}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
      ],
    ],
    [
      'xl/workbook.xml',
      [
        `<workbook xmlns="${MAIN}" xmlns:r="${DOC}"><sheets><sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>`,
      ],
    ],
    [
      'xl/_rels/workbook.xml.rels',
      [
        `<Relationships xmlns="${RELS}"><Relationship Id="rId1" Type="${DOC}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`,
      ],
    ],
    ...(sharedStrings
      ? [['xl/sharedStrings.xml', [`<sst xmlns="${MAIN}">`, ...sharedStrings, '</sst>']] as ZipEntry]
      : []),
    ...extra,
    [
      'xl/worksheets/sheet1.xml',
      [`<worksheet xmlns="${MAIN}"><sheetData>`, ...sheetData, '</sheetData></worksheet>'],
    ],
  ];
}

/** An inline-string cell. */
export const inline = (ref: string, text: string): string =>
  `<c r="${ref}" t="inlineStr"><is><t>${text}</t></is></c>`;

/** The header row (name, email) and one customer, inline strings. */
export function customerRows(name: string, email: string): string {
  return `<row r="1">${inline('A1', 'name')}${inline('B1', 'email')}</row><row r="2">${inline('A2', name)}${inline('B2', email)}</row>`;
}

const MB = 1024 * 1024;

/** The attack files of issue 34 #1 (each a complete zip); `header` rows name a customer to create. */
export const bombs = {
  /** One inline string of 200 MB of 'A' (deflates to some 200 KB). */
  inlineString: () =>
    zipOf(
      workbook([
        `<row r="1">${inline('A1', 'name')}</row><row r="2"><c r="A2" t="inlineStr"><is><t>`,
        { repeat: 'A', times: 200 * MB },
        '</t></is></c></row>',
      ]),
    ),
  /** One shared string of 200 MB, used by a cell. */
  sharedString: () =>
    zipOf(
      workbook(
        [`<row r="1">${inline('A1', 'name')}</row><row r="2"><c r="A2" t="s"><v>0</v></c></row>`],
        ['<si><t>', { repeat: 'A', times: 200 * MB }, '</t></si>'],
      ),
    ),
  /** 100 MB of zeros in a part the reader skips (a picture), beside a harmless sheet. */
  ratio: () =>
    zipOf(
      workbook([`<row r="1">${inline('A1', 'name')}</row>`], undefined, [
        ['xl/media/image1.png', [{ repeat: '\0', times: 100 * MB }]],
      ]),
    ),
  /** An external entity (XXE) in the sheet. */
  xxe: () =>
    zipOf(
      workbook([`<row r="1">${inline('A1', 'name')}</row><row r="2">${inline('A2', '&xxe;')}</row>`]).map(
        ([n, c]) =>
          n.endsWith('sheet1.xml')
            ? [
                n,
                [
                  '<?xml version="1.0"?><!DOCTYPE worksheet [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
                  ...(c as Piece[]),
                ],
              ]
            : [n, c],
      ),
    ),
  /** Entity expansion (billion laughs) in the shared strings. */
  billionLaughs: () => {
    let dtd = '<!ENTITY l0 "lol">';
    for (let i = 1; i < 10; i++) dtd += `<!ENTITY l${i} "${`&l${i - 1};`.repeat(10)}">`;
    return zipOf(
      workbook(
        [`<row r="1">${inline('A1', 'name')}</row><row r="2"><c r="A2" t="s"><v>0</v></c></row>`],
        ['<si><t>&l9;</t></si>'],
      ).map(([n, c]) =>
        n.endsWith('sharedStrings.xml')
          ? [n, [`<?xml version="1.0"?><!DOCTYPE sst [${dtd}]>`, ...(c as Piece[])]]
          : [n, c],
      ),
    );
  },
  /** A customer, and a cell at the last address of a sheet (XFD1048576). */
  farCell: (name: string, email: string) =>
    zipOf(workbook([customerRows(name, email), `<row r="1048576">${inline('XFD1048576', 'far')}</row>`])),
  /** A header of 16,384 columns (the widest sheet), and a customer. */
  wideRow: (name: string, email: string) => {
    const cols: string[] = [];
    for (let i = 2; i < 16384; i++) cols.push(`<c r="${column(i)}1"><v>${i}</v></c>`);
    return zipOf(
      workbook([
        `<row r="1">${inline('A1', 'name')}${inline('B1', 'email')}${cols.join('')}</row><row r="2">${inline('A2', name)}${inline('B2', email)}</row>`,
      ]),
    );
  },
  /** A customer, then `n` empty rows. */
  emptyRows: (name: string, email: string, n: number) =>
    zipOf(workbook([customerRows(name, email), { repeat: '<row/>', times: n }])),
};

/** The letters of a 0-based column (0 → A, 16383 → XFD). */
export function column(i: number): string {
  let s = '';
  for (let n = i + 1; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s;
  return s;
}
