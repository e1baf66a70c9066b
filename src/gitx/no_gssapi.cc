// GSSAPI (Kerberos) entry points that say "unavailable", for the statically
// linked phoenix and phoenix-loop (top-level CMakeLists.txt).
//
// libgit2 calls these only for the "Negotiate" authentication of an HTTP
// remote. Phoenix never fetches nor pushes: every repository operation is
// local (gitx/). Debian ships static archives of libgit2 and of everything
// it links except Kerberos, so a static link needs either the Kerberos
// shared libraries (seven of them, loaded at every start) or these: with
// them, libgit2 finds no mechanism and says "negotiate authentication is
// not supported", as on a machine where Kerberos offers none.
//
// Linked only into programs that link libgit2.a; a program that links
// libgit2.so gets the real library's functions instead.
#include <cstddef>
#include <cstdint>

extern "C" {

using OM_uint32 = std::uint32_t;

struct gss_OID_desc {
  OM_uint32 length;
  void* elements;
};
struct gss_buffer_desc {
  std::size_t length;
  void* value;
};

namespace {
constexpr OM_uint32 kFailure = 13u << 16;  // GSS_S_FAILURE
// 1.2.840.113554.1.2.1.4, GSS_C_NT_HOSTBASED_SERVICE's OID (RFC 2744).
char kHostBasedOid[] = "\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04";
gss_OID_desc kHostBased{10, kHostBasedOid};

OM_uint32 fail(OM_uint32* minor) {
  if (minor) *minor = 0;
  return kFailure;
}
OM_uint32 done(OM_uint32* minor) {
  if (minor) *minor = 0;
  return 0;
}
}  // namespace

gss_OID_desc* GSS_C_NT_HOSTBASED_SERVICE = &kHostBased;

// No mechanism at all (an empty set): libgit2 then offers no Negotiate.
OM_uint32 gss_indicate_mechs(OM_uint32* minor, void** mech_set) {
  if (mech_set) *mech_set = nullptr;
  return done(minor);
}

OM_uint32 gss_import_name(OM_uint32* minor, gss_buffer_desc*, gss_OID_desc*, void** name) {
  if (name) *name = nullptr;
  return fail(minor);
}

OM_uint32 gss_init_sec_context(OM_uint32* minor, void*, void** context, void*, gss_OID_desc*, OM_uint32, OM_uint32,
                               void*, gss_buffer_desc*, gss_OID_desc** actual_mech, gss_buffer_desc* output,
                               OM_uint32* ret_flags, OM_uint32* time_rec) {
  if (context) *context = nullptr;
  if (actual_mech) *actual_mech = nullptr;
  if (output) *output = {0, nullptr};
  if (ret_flags) *ret_flags = 0;
  if (time_rec) *time_rec = 0;
  return fail(minor);
}

// No text: libgit2 then says "unknown negotiate error".
OM_uint32 gss_display_status(OM_uint32* minor, OM_uint32, int, gss_OID_desc*, OM_uint32* message_context,
                             gss_buffer_desc* status_string) {
  if (message_context) *message_context = 0;
  if (status_string) *status_string = {0, nullptr};
  return fail(minor);
}

OM_uint32 gss_release_buffer(OM_uint32* minor, gss_buffer_desc* buffer) {
  if (buffer) *buffer = {0, nullptr};
  return done(minor);
}

OM_uint32 gss_release_name(OM_uint32* minor, void** name) {
  if (name) *name = nullptr;
  return done(minor);
}

OM_uint32 gss_release_oid_set(OM_uint32* minor, void** set) {
  if (set) *set = nullptr;
  return done(minor);
}

OM_uint32 gss_delete_sec_context(OM_uint32* minor, void** context, gss_buffer_desc* output) {
  if (context) *context = nullptr;
  if (output) *output = {0, nullptr};
  return done(minor);
}

}  // extern "C"
