"""Transformer Explorer on JupyterHub (docs/deploying.md): the launcher tile that starts each student's own explorer
(proxy), and the class's teacher page as a hub service (service) with what students' servers report to it
(reports). A student's server reports through explorer.classroom.hub_link."""
