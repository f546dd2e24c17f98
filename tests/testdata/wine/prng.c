/*
 * bcryptprimitives.dll for Wine 8 (Debian 12), which lacks it: Go's
 * runtime (1.24 and later) loads ProcessPrng from it at start and stops
 * without it. This one answers from RtlGenRandom (advapi32's
 * SystemFunction036), which Wine has. Windows itself has the real DLL:
 * this file exists only so that the Windows test can run luamcp.exe under
 * Wine (tests/windows_test.go builds it with mingw-w64 into the test's
 * Wine prefix).
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
	while (length > 0) {
		ULONG n = length > 0x40000000 ? 0x40000000 : (ULONG)length;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		length -= n;
	}
	return TRUE;
}
