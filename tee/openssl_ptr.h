// One way to own a C library's object (OpenSSL, xmlsec): std::unique_ptr with the library's own free
// function as a compile-time deleter, instead of a deleter struct per type and file.
//   using BioPtr = tee::CPtr<BIO, BIO_free_all>;
// Free functions that are macros (OpenSSL's sk_*_free) or variables (libxml2's xmlFree) cannot be
// named here; those few keep a deleter struct of their own.
#pragma once
#include <memory>

namespace tt::tee {

template <auto Free>
struct CFree {
  template <class T>
  void operator()(T* p) const noexcept {
    Free(p);
  }
};

template <class T, auto Free>
using CPtr = std::unique_ptr<T, CFree<Free>>;

}  // namespace tt::tee
