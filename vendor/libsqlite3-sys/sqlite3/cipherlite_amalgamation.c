/*
** cipherlite: the translation unit its SQLite is compiled from (see ../CIPHERLITE.md).
**
** The amalgamation, unchanged, and after it one function of cipherlite's own that reads
** a whole result row through SQLite's public column API. Compiled in the same unit, the
** compiler inlines those small API functions into it, so a row costs the driver one call
** instead of three or four per cell (src/binding/results.rs encodes the cells).
*/
#include "sqlite3.c"

/* One column of the current result row, as the sqlite3_value_* readers give it. */
typedef struct CipherliteCell {
  const void *bytes;   /* TEXT (UTF-8) or BLOB contents; NULL for other types */
  sqlite3_int64 value; /* INTEGER, or the bit pattern of a FLOAT */
  int length;          /* bytes of TEXT or BLOB */
  int type;            /* SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL */
} CipherliteCell;

/*
** Fills cells[0..count) from columns 0..count of the row `stmt` is positioned on: exactly
** sqlite3_column_value, then sqlite3_value_type and the reader of that type (for TEXT and
** BLOB the pointer first, then sqlite3_value_bytes, as SQLite's documentation orders
** them). The pointers stay valid until the statement steps, resets or is finalized, or
** its columns are read again.
**
** `flatten` inlines the column API (and what it calls) into this loop whatever the
** optimisation level: SQLite is compiled at -O2 (Cargo.toml), where GCC inlines less,
** and without it a row read ~4% slower than at -O3.
*/
#if defined(__GNUC__)
__attribute__((flatten))
#endif
void cipherlite_row_cells(sqlite3_stmt *stmt, int count, CipherliteCell *cells){
  int i;
  for(i=0; i<count; i++){
    sqlite3_value *v = sqlite3_column_value(stmt, i);
    CipherliteCell *cell = &cells[i];
    cell->bytes = 0;
    cell->value = 0;
    cell->length = 0;
    cell->type = sqlite3_value_type(v);
    switch( cell->type ){
      case SQLITE_INTEGER:
        cell->value = sqlite3_value_int64(v);
        break;
      case SQLITE_FLOAT: {
        double d = sqlite3_value_double(v);
        memcpy(&cell->value, &d, sizeof(d));
        break;
      }
      case SQLITE_TEXT:
        cell->bytes = sqlite3_value_text(v);
        cell->length = sqlite3_value_bytes(v);
        break;
      case SQLITE_BLOB:
        cell->bytes = sqlite3_value_blob(v);
        cell->length = sqlite3_value_bytes(v);
        break;
      default:
        break;
    }
  }
}
