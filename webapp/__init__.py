"""webapp"""
