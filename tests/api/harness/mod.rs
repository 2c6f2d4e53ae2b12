//! What a test harness needs of the server (issue 27): fixtures applied at start, and a reset
//! between tests that puts them back and makes informers relist.

mod fixtures;
