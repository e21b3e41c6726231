/**
 * Babel plugin used only by Jest: NestJS 12's ES modules declare `const require =
 * createRequire(import.meta.url)`. Compiled to CommonJS, that local would shadow the module's own
 * `require` used by the rewritten imports, so it is renamed first.
 */
module.exports = function esmRequireRename() {
  return {
    visitor: {
      Program(path) {
        if (path.scope.hasOwnBinding('require')) path.scope.rename('require', '_esmRequire');
      },
    },
  };
};
