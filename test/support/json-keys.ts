/**
 * Keys that occur more than once in the same JSON object, at any depth, as `a.b.key` paths.
 * JSON.parse keeps the last of duplicate keys silently, so log lines are checked with this small
 * tokenizer instead (strict log ingesters reject such lines). Throws on text that is not JSON.
 */
export function duplicateKeys(json: string): string[] {
  JSON.parse(json); // validity first; the walk below assumes well-formed text
  const duplicates: string[] = [];
  let i = 0;

  const skipSpace = (): void => {
    while (i < json.length && ' \t\r\n'.includes(json[i])) i++;
  };
  const readString = (): string => {
    let out = '';
    i++; // opening quote
    while (json[i] !== '"') {
      if (json[i] === '\\') {
        out += json.slice(i, i + 2);
        i += 2;
      } else {
        out += json[i++];
      }
    }
    i++; // closing quote
    return JSON.parse(`"${out}"`) as string;
  };
  const readValue = (path: string): void => {
    skipSpace();
    const c = json[i];
    if (c === '{') {
      i++;
      const seen = new Set<string>();
      skipSpace();
      if (json[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        skipSpace();
        const key = readString();
        if (seen.has(key)) duplicates.push(path + key);
        seen.add(key);
        skipSpace();
        i++; // colon
        readValue(`${path}${key}.`);
        skipSpace();
        if (json[i++] === '}') return;
      }
    }
    if (c === '[') {
      i++;
      skipSpace();
      if (json[i] === ']') {
        i++;
        return;
      }
      for (let n = 0; ; n++) {
        readValue(`${path}${n}.`);
        skipSpace();
        if (json[i++] === ']') return;
      }
    }
    if (c === '"') {
      readString();
      return;
    }
    while (i < json.length && !',]} \t\r\n'.includes(json[i])) i++;
  };

  readValue('');
  return duplicates;
}
