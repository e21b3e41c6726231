#!/usr/bin/env node
/** Writes .env.example from the variable declarations (src/config/variables.ts), so they never drift. */
'use strict';
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { VARIABLES, ENV_EXAMPLE_HEADER } = require('../dist/config/config.schema');
const { envExample } = require('../dist/config/variable');

writeFileSync(join(__dirname, '..', '.env.example'), envExample(VARIABLES, ENV_EXAMPLE_HEADER));
process.stderr.write(`.env.example: ${VARIABLES.length} variables\n`);
