/** The row-filter grammar of D23: lexer → parser → tree; analysis; compiler to parameterised SQL. */
export * from './row-filter.types';
export { parseRowFilter } from './parser';
export { rowFilterFields, rowFilterVariables } from './analysis';
export * from './compile';
