// `import … from 'cipherlite/evolu'`: the same module object as require('cipherlite/evolu')
// (lib/evolu.js), so an application that mixes import and require has one copy.
import evolu from './evolu.js';

export const { createEvoluStorage, createEvoluSqliteDriver } = evolu;
export default evolu;
