/**
 * Measures an XML part of a workbook as its inflated bytes pass, in constant memory, for what the
 * XML parser exceljs uses (saxes) and exceljs itself would hold at once: a bound exceeded throws
 * before the reader ever sees the part (xlsx-guard.ts).
 *
 * - a *run*: the bytes from one element tag's `<` to the next — the tag with its attributes and
 *   the text after it, comments, CDATA and processing instructions included (saxes accumulates
 *   each of those whole, and exceljs joins the text pieces of an element);
 * - a *cell*: the bytes of a worksheet's `<c>…</c>` or a shared string's `<si>…</si>` (a cell's
 *   rich-text runs are joined into one value);
 * - a *row*: the bytes of a worksheet's `<row>…</row>` (exceljs holds a row whole);
 * - the number of `<si>` elements (exceljs keeps every shared string in memory).
 *
 * A DTD (`<!DOCTYPE`, `<!ENTITY`) is refused outright: OOXML parts carry none (ECMA-376 Part 2,
 * OPC), and it is what external entities and entity expansion need.
 */

const LT = 0x3c;
const GT = 0x3e;

type State = 'text' | 'lt' | 'name' | 'bang' | 'comment' | 'cdata' | 'pi';

export class XmlBoundError extends Error {}

export interface XmlBounds {
  /** Longest run (see above) and longest cell, in bytes. */
  maxRunBytes: number;
  /** Longest `<row>` element, in bytes. */
  maxRowBytes: number;
}

/** Element names (as read after `<`, a close tag with its `/`) that open and close what is measured. */
const CELL_OPEN = new Set(['c', 'si']);
const CELL_CLOSE = new Set(['/c', '/si', 'row', '/row', '/sheetData', '/sst']);

export class XmlMeter {
  /** `<si>` elements seen. */
  sharedStrings = 0;
  private state: State = 'text';
  private run = 0;
  /** Bytes of the open cell, -1 outside one. */
  private cell = -1;
  /** Bytes of the open row, -1 outside one. */
  private row = -1;
  private name = '';
  private bang = '';
  /** The two bytes before the current one inside a comment, CDATA or processing instruction. */
  private p1 = 0;
  private p2 = 0;

  constructor(private readonly bounds: XmlBounds) {}

  write(buf: Buffer): void {
    let i = 0;
    while (i < buf.length) {
      switch (this.state) {
        case 'text': {
          const j = buf.indexOf(LT, i);
          const end = j < 0 ? buf.length : j + 1;
          this.grow(end - i);
          i = end;
          if (j >= 0) this.state = 'lt';
          break;
        }
        case 'lt': {
          const b = buf[i];
          if (b === 0x21 /* ! */) this.enter('bang');
          else if (b === 0x3f /* ? */) this.enter('pi');
          else {
            // An element tag: a new run starts with its `<`; its name decides cell and row.
            this.run = 1;
            this.name = '';
            this.state = 'name';
            break;
          }
          this.grow(1);
          i++;
          break;
        }
        case 'name': {
          const b = buf[i];
          if (
            b === 0x20 ||
            b === 0x09 ||
            b === 0x0a ||
            b === 0x0d ||
            b === GT ||
            b === LT ||
            (b === 0x2f && this.name !== '')
          ) {
            this.element(this.name);
            this.state = 'text';
            break;
          }
          if (this.name.length < 16) this.name += String.fromCharCode(b);
          this.grow(1);
          i++;
          break;
        }
        case 'bang': {
          this.bang += String.fromCharCode(buf[i]);
          this.grow(1);
          i++;
          if (this.bang === '--') this.enter('comment');
          else if (this.bang === '[CDATA[') this.enter('cdata');
          else if (!'--'.startsWith(this.bang) && !'[CDATA['.startsWith(this.bang))
            throw new XmlBoundError('a DTD declaration (an XLSX part has none)');
          break;
        }
        case 'comment':
        case 'cdata':
        case 'pi': {
          // Inside a comment, CDATA section or processing instruction: up to its end, nothing resets.
          const j = buf.indexOf(GT, i);
          const end = j < 0 ? buf.length : j + 1;
          this.grow(end - i);
          if (j >= 0 && this.closes(buf, i, j)) this.state = 'text';
          this.p2 = end - i >= 2 ? buf[end - 2] : this.p1;
          this.p1 = buf[end - 1];
          i = end;
        }
      }
    }
  }

  private enter(state: State): void {
    this.state = state;
    this.bang = '';
    this.p1 = 0;
    this.p2 = 0;
  }

  /** Whether the `>` at j ends the construct: `-->`, `]]>`, `?>`. */
  private closes(buf: Buffer, from: number, j: number): boolean {
    const b1 = j - 1 >= from ? buf[j - 1] : this.p1;
    const b2 = j - 2 >= from ? buf[j - 2] : j - 1 >= from ? this.p1 : this.p2;
    if (this.state === 'pi') return b1 === 0x3f;
    const c = this.state === 'comment' ? 0x2d : 0x5d;
    return b1 === c && b2 === c;
  }

  private element(name: string): void {
    if (name === 'si') this.sharedStrings++;
    if (CELL_CLOSE.has(name)) this.cell = -1;
    if (CELL_OPEN.has(name)) this.cell = this.run;
    if (name === '/row' || name === '/sheetData') this.row = -1;
    if (name === 'row') this.row = this.run;
  }

  private grow(n: number): void {
    this.run += n;
    if (this.run > this.bounds.maxRunBytes)
      throw new XmlBoundError(`an XML tag or text longer than ${this.bounds.maxRunBytes} bytes`);
    if (this.cell >= 0 && (this.cell += n) > this.bounds.maxRunBytes)
      throw new XmlBoundError(`a cell longer than ${this.bounds.maxRunBytes} bytes of XML`);
    if (this.row >= 0 && (this.row += n) > this.bounds.maxRowBytes)
      throw new XmlBoundError(`a row longer than ${this.bounds.maxRowBytes} bytes of XML`);
  }
}
