//! Tests of the file tools as a whole, by topic (each module's own tests sit beside it).

mod concurrency;
mod special_files;
