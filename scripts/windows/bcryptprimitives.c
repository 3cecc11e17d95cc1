/* Test scaffolding for Wine only (scripts/test-windows.js): Wine 8 has no
 * bcryptprimitives.dll, whose ProcessPrng Rust's standard library imports on Windows 10
 * and later (every supported Windows has it). This stand-in answers from RtlGenRandom
 * (advapi32's SystemFunction036), which Wine has. Never shipped. */
#include <windows.h>

typedef BOOLEAN(WINAPI *rtl_gen_random)(PVOID, ULONG);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  static rtl_gen_random gen;
  if (!gen) {
    HMODULE advapi = LoadLibraryA("advapi32.dll");
    if (!advapi) return FALSE;
    gen = (rtl_gen_random)GetProcAddress(advapi, "SystemFunction036");
    if (!gen) return FALSE;
  }
  while (len > 0) {
    ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
    if (!gen(data, chunk)) return FALSE;
    data += chunk;
    len -= chunk;
  }
  return TRUE;
}
